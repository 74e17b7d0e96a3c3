package nginx

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// TLSOptions turns HTTPS on for a Supervisor: one ACME certificate per
// domain (HTTP-01 through nginx's plain HTTP server, see CertManager) and
// the HTTPS server in tls.conf (see RenderTLS).
type TLSOptions struct {
	Domains      []string       // at least one
	Email        string         // ACME account contact; may be empty
	CA           string         // ACME directory URL
	TrustedRoots *x509.CertPool // for the CA's own TLS; nil means the system roots
	StoragePath  string         // certmagic's storage; keep it on a volume
	CertDir      string         // the pairs nginx reads; empty means RunDir/certs

	HTTPSListen  string // nginx listen of the HTTPS server, e.g. "8443"
	HTTPListen   string // nginx listen of the plain HTTP server, e.g. "8080"
	Locations    string // nginx file with the public locations
	Redirect     bool   // 308 from plain HTTP to HTTPS for the domains
	RedirectPort int    // public HTTPS port in redirects
	HSTS         bool
	HSTSMaxAge   int // seconds
}

// edgeTLS is the TLS side of a Supervisor: off (certs nil) or a
// CertManager.
type edgeTLS struct {
	s        *Supervisor
	certs    *CertManager
	domains  []string
	httpAddr string // where nginx's plain HTTP server can be dialled
}

func newEdgeTLS(s *Supervisor) (*edgeTLS, error) {
	m := &edgeTLS{s: s}
	o := s.TLS
	if o == nil {
		return m, nil
	}
	m.domains = o.Domains
	m.httpAddr = dialAddr(o.HTTPListen)
	_, chPortStr, _ := net.SplitHostPort(s.ChallengeListen)
	chPort, err := strconv.Atoi(chPortStr)
	if err != nil || chPort == 0 {
		return nil, fmt.Errorf("challenge listener: TLS needs a fixed port, got %q", s.ChallengeListen)
	}
	certDir := o.CertDir
	if certDir == "" {
		certDir = s.path("certs")
	}
	m.certs, err = NewCertManager(CertOptions{
		Domains: o.Domains, Email: o.Email, CA: o.CA, TrustedRoots: o.TrustedRoots,
		StoragePath: o.StoragePath, ExportDir: certDir, ChallengePort: chPort, Apply: s.apply,
		OnLive: s.Metrics.certLive,
	}, s.Log)
	if err != nil {
		return nil, err
	}
	conf, err := RenderTLS(TLSServer{
		Sites: m.certs.Sites(), CA: o.CA, HTTPSListen: o.HTTPSListen, Locations: o.Locations,
		HSTS: o.HSTS, HSTSMaxAge: o.HSTSMaxAge,
		Redirect: o.Redirect, HTTPListen: o.HTTPListen, ChallengeAddr: s.ChallengeListen, RedirectPort: o.RedirectPort,
	})
	if err != nil {
		return nil, err
	}
	m.certs.SetAlso(FileChange{Path: s.path("tls.conf"), Data: conf})
	return m, nil
}

// prepare writes tls.conf (and with TLS the certificate pairs) before
// nginx starts.
func (m *edgeTLS) prepare(ctx context.Context) error {
	tlsPath := m.s.path("tls.conf")
	if m.certs == nil {
		data, err := RenderTLS(TLSServer{})
		if err != nil {
			return err
		}
		if err := WriteFileAtomic(tlsPath, data, 0o644); err != nil {
			return fmt.Errorf("writing tls.conf: %w", err)
		}
		m.s.Log.Info().Str("file", tlsPath).Msg("TLS is off")
		return nil
	}
	if err := m.certs.Prepare(ctx); err != nil {
		return fmt.Errorf("preparing certificates: %w", err)
	}
	m.s.Log.Info().Str("file", tlsPath).Strs("domains", m.domains).Msg("TLS is on")
	return nil
}

func (m *edgeTLS) challengeHandler() http.Handler {
	if m.certs == nil {
		return http.NotFoundHandler()
	}
	return m.certs.HTTPChallengeHandler(http.NotFoundHandler())
}

// run manages certificates until ctx ends; each value on renew forces a
// renewal of every domain.
func (m *edgeTLS) run(ctx context.Context, renew <-chan os.Signal) {
	if m.certs == nil {
		return
	}
	log := m.s.Log
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-renew:
			}
			for _, d := range m.domains {
				log.Info().Str("domain", d).Msg("forced renewal requested")
				if err := m.certs.Renew(ctx, d, true); err != nil && !errors.Is(err, context.Canceled) {
					log.Error().Err(err).Str("domain", d).Msg("forced renewal failed")
				}
			}
		}
	}()
	// An ACME order right away would race nginx's start: the CA's first
	// validation would find nothing listening and certmagic would wait a
	// minute before it tried again.
	if err := waitListening(ctx, m.httpAddr, 30*time.Second); err != nil {
		log.Warn().Err(err).Str("addr", m.httpAddr).Msg("nginx's HTTP port is not answering; ordering certificates anyway")
	}
	if err := m.certs.Run(ctx); err != nil {
		log.Error().Err(err).Msg("certificate management stopped")
	}
}

func (m *edgeTLS) stop() {
	if m.certs != nil {
		m.certs.Stop()
	}
}

// dialAddr turns an nginx listen value ("8080", "*:8080", "0.0.0.0:8080",
// "127.0.0.1:28080") into an address to dial on this host.
func dialAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return net.JoinHostPort("127.0.0.1", listen)
	}
	switch host {
	case "", "*", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

// waitListening waits until something accepts TCP connections on addr.
func waitListening(ctx context.Context, addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
