package nginx

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"
)

// listen starts the supervisor's own HTTP listeners: the challenge
// responder and, when configured, the metrics listener. stop closes both.
func (s *Supervisor) listen() (stop func(), err error) {
	challenge, err := serveHTTP(s.Log, "challenge responder", s.ChallengeListen, s.tls.challengeHandler())
	if err != nil {
		return nil, err
	}
	if s.MetricsListen == "" || s.MetricsHandler == nil {
		return func() { challenge.Close() }, nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.MetricsHandler)
	metrics, err := serveHTTP(s.Log, "metrics listener", s.MetricsListen, mux)
	if err != nil {
		challenge.Close()
		return nil, err
	}
	return func() { challenge.Close(); metrics.Close() }, nil
}

// serveHTTP serves h over plain HTTP on addr until the returned server is
// closed. name names the listener in the error and in log, where a
// failure after the start goes.
func serveHTTP(log zerolog.Logger, name, addr string, h http.Handler) (*http.Server, error) {
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
