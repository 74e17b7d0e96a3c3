package cli

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"
)

// ServeHTTP serves h over plain HTTP on addr until the returned server is
// closed: the commands' internal listeners (the worker's internal and pprof
// listeners, sudoku-edge's challenge responder and metrics listener). name
// names the listener in the error and in log, where a failure after the
// start goes.
func ServeHTTP(log zerolog.Logger, name, addr string, h http.Handler) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Str("listener", name).Msg("http listener stopped")
		}
	}()
	return srv, nil
}
