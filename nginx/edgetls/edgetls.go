// Package edgetls keeps the edge's TLS: one ACME certificate per domain
// with certmagic (HTTP-01 only, through nginx's plain HTTP server), the
// pairs nginx reads, exported atomically, and tls.conf. A [Manager] hands
// each change to the proc.Applier, which reloads nginx only on a
// configuration that passes `nginx -t`. certmagic logs through zerolog.
package edgetls

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"sudoku-fcgi/nginx/conf"
	"sudoku-fcgi/nginx/proc"
)

// Options turns HTTPS on: one ACME certificate per domain (HTTP-01
// through nginx's plain HTTP server, see certManager) and the HTTPS server
// in tls.conf (see conf.RenderTLS). The domains are checked by the caller
// (conf.CheckDomain).
type Options struct {
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
	// ProxyProtocol: every listen takes the PROXY protocol.
	ProxyProtocol bool
}

// tlsSites lists the domains with the files nginx reads for them, in
// certDir/live (see pairsChange).
func tlsSites(domains []string, certDir string) []conf.TLSSite {
	live := filepath.Join(certDir, "live")
	var out []conf.TLSSite
	for _, d := range domains {
		out = append(out, conf.TLSSite{Name: d,
			CertFile: filepath.Join(live, d+".crt"), KeyFile: filepath.Join(live, d+".key")})
	}
	return out
}

// renderTLSConf renders tls.conf for o (nil: TLS off), a pure function of
// the options.
func renderTLSConf(o *Options, certDir, challengeListen string) ([]byte, error) {
	if o == nil {
		return conf.RenderTLS(conf.TLSServer{})
	}
	return conf.RenderTLS(conf.TLSServer{
		Sites: tlsSites(o.Domains, certDir), CA: o.CA, HTTPSListen: o.HTTPSListen, Locations: o.Locations,
		HSTS: o.HSTS, HSTSMaxAge: o.HSTSMaxAge,
		Redirect: o.Redirect, HTTPListen: o.HTTPListen, ChallengeAddr: challengeListen, RedirectPort: o.RedirectPort,
		ProxyProtocol: o.ProxyProtocol,
	})
}

// Manager is the TLS side of the edge: tls.conf, and with TLS on the
// certManager whose pairs it applies together with tls.conf.
type Manager struct {
	certs    *certManager // nil with TLS off
	tlsFile  proc.FileChange
	domains  []string
	httpAddr string // where nginx's plain HTTP server can be dialled
	applier  *proc.Applier
	metrics  *Metrics
	log      zerolog.Logger

	mu sync.Mutex // serialises exports: the certificate loop and forced renewals
}

// New renders tls.conf and, with o set, configures the certificates.
func New(o *Options, runDir, challengeListen string, applier *proc.Applier, metrics *Metrics, log zerolog.Logger) (*Manager, error) {
	m := &Manager{applier: applier, metrics: metrics, log: log}
	certDir := filepath.Join(runDir, "certs")
	if o != nil && o.CertDir != "" {
		certDir = o.CertDir
	}
	data, err := renderTLSConf(o, certDir, challengeListen)
	if err != nil {
		return nil, err
	}
	m.tlsFile = proc.FileChange{Path: filepath.Join(runDir, "tls.conf"), Data: data}
	if o == nil {
		return m, nil
	}
	m.domains = o.Domains
	m.httpAddr = dialAddr(o.HTTPListen)
	_, chPortStr, _ := net.SplitHostPort(challengeListen)
	chPort, err := strconv.Atoi(chPortStr)
	if err != nil || chPort == 0 {
		return nil, fmt.Errorf("challenge listener: TLS needs a fixed port, got %q", challengeListen)
	}
	m.certs, err = newCertManager(certOptions{
		Domains: o.Domains, Email: o.Email, CA: o.CA, TrustedRoots: o.TrustedRoots,
		StoragePath: o.StoragePath, ExportDir: certDir, ChallengePort: chPort,
		Failures: metrics.certFailuresCounter(),
	}, log)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Prepare writes tls.conf (and with TLS the certificate pairs) before
// nginx starts.
func (m *Manager) Prepare(ctx context.Context) error {
	if _, _, err := m.tlsFile.Stage(); err != nil {
		return fmt.Errorf("writing tls.conf: %w", err)
	}
	if m.certs == nil {
		m.log.Info().Str("file", m.tlsFile.Path).Msg("TLS is off")
		return nil
	}
	ch, err := m.certs.Prepare(ctx)
	if err != nil {
		return fmt.Errorf("preparing certificates: %w", err)
	}
	m.live(ch)
	m.log.Info().Str("file", m.tlsFile.Path).Strs("domains", m.domains).Msg("TLS is on")
	return nil
}

// export applies the pairs in storage together with tls.conf (nginx -t,
// reload) and, once nginx reads them, reports them in the metrics.
func (m *Manager) export(ctx context.Context) (proc.Outcome, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch, err := m.certs.Pairs(ctx)
	if err != nil {
		return proc.Failed, err
	}
	outcome, err := m.applier.Apply(ctx, m.tlsFile, ch)
	if err != nil {
		return outcome, err
	}
	m.certs.Exported(ch)
	m.live(ch)
	if outcome == proc.Reloaded {
		for _, p := range ch.pairs {
			m.log.Info().Str("domain", p.name).Str("source", p.source).Str("serial", p.serial).
				Time("not_after", p.notAfter).Msg("certificate exported to nginx")
		}
	}
	return outcome, nil
}

// live reports the pairs nginx reads now.
func (m *Manager) live(ch *pairsChange) {
	for _, p := range ch.pairs {
		m.metrics.certLive(p.name, p.notAfter, p.placeholder)
	}
}

// ChallengeHandler answers ACME HTTP-01 challenges, and 404 to anything
// else or with TLS off.
func (m *Manager) ChallengeHandler() http.Handler {
	if m.certs == nil {
		return http.NotFoundHandler()
	}
	return m.certs.HTTPChallengeHandler(http.NotFoundHandler())
}

// Run manages certificates until ctx ends; each value on renew forces a
// renewal of every domain.
func (m *Manager) Run(ctx context.Context, renew <-chan os.Signal) {
	if m.certs == nil {
		return
	}
	log := m.log
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-renew:
			}
			for _, d := range m.domains {
				log.Info().Str("domain", d).Msg("forced renewal requested")
				err := m.certs.Renew(ctx, d, true)
				if err == nil {
					_, err = m.export(ctx)
				}
				if err != nil && !errors.Is(err, context.Canceled) {
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
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.certs.Due():
		}
		if _, err := m.export(ctx); err != nil && ctx.Err() == nil {
			log.Error().Err(err).Msg("exporting certificates for nginx")
		}
	}
}

// Stop stops certmagic's goroutines; it is safe to call more than once.
func (m *Manager) Stop() {
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
