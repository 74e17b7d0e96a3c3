package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/rs/zerolog"

	"sudoku-fcgi/nginx"
)

// tlsFlags holds the TLS flags. With no domains TLS is off.
type tlsFlags struct{}

func (t *tlsFlags) register(fs envFlagSet) {}

func (t *tlsFlags) validate() error { return nil }

// tlsManager is what run needs from the TLS side.
type tlsManager struct {
	log     zerolog.Logger
	tlsPath string
}

func (t *tlsFlags) build(ctx context.Context, log zerolog.Logger, c config, applier *nginx.Applier, tlsPath string) (*tlsManager, error) {
	return &tlsManager{log: log, tlsPath: tlsPath}, nil
}

// prepare writes tls.conf before nginx starts.
func (m *tlsManager) prepare(ctx context.Context) error {
	data, err := nginx.RenderTLS(nginx.TLSServer{})
	if err != nil {
		return err
	}
	if err := nginx.WriteFileAtomic(m.tlsPath, data, 0o644); err != nil {
		return fmt.Errorf("writing tls.conf: %w", err)
	}
	m.log.Info().Str("file", m.tlsPath).Msg("TLS is off")
	return nil
}

func (m *tlsManager) challengeHandler() http.Handler { return http.NotFoundHandler() }

func (m *tlsManager) run(ctx context.Context) {}

func (m *tlsManager) stop() {}
