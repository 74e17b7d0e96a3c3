package nginx

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
)

// TLSOptions turns HTTPS on for a Supervisor: one ACME certificate per
// domain (HTTP-01 through nginx's plain HTTP server, see certManager) and
// the HTTPS server in tls.conf (see renderTLS). The domains are checked
// by the caller (CheckDomain).
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
	// ProxyProtocol: every listen takes the PROXY protocol. The Supervisor
	// sets it from its own ProxyProtocol.
	ProxyProtocol bool
}

// tlsSites lists the domains with the files nginx reads for them, in
// certDir/live (see pairsChange).
func tlsSites(domains []string, certDir string) []tlsSite {
	live := filepath.Join(certDir, "live")
	var out []tlsSite
	for _, d := range domains {
		out = append(out, tlsSite{Name: d,
			CertFile: filepath.Join(live, d+".crt"), KeyFile: filepath.Join(live, d+".key")})
	}
	return out
}

// renderTLSConf renders tls.conf for o (nil: TLS off), a pure function of
// the options.
func renderTLSConf(o *TLSOptions, certDir, challengeListen string) ([]byte, error) {
	if o == nil {
		return renderTLS(tlsServer{})
	}
	return renderTLS(tlsServer{
		Sites: tlsSites(o.Domains, certDir), CA: o.CA, HTTPSListen: o.HTTPSListen, Locations: o.Locations,
		HSTS: o.HSTS, HSTSMaxAge: o.HSTSMaxAge,
		Redirect: o.Redirect, HTTPListen: o.HTTPListen, ChallengeAddr: challengeListen, RedirectPort: o.RedirectPort,
		ProxyProtocol: o.ProxyProtocol,
	})
}

// edgeTLS is the TLS side of a Supervisor: tls.conf, and with TLS on the
// certManager whose pairs it applies together with tls.conf.
type edgeTLS struct {
	certs    *certManager // nil with TLS off
	tlsFile  fileChange
	domains  []string
	httpAddr string // where nginx's plain HTTP server can be dialled
	applier  *configApplier
	metrics  *Metrics
	log      zerolog.Logger

	mu sync.Mutex // serialises exports: the certificate loop and forced renewals
}

// newEdgeTLS renders tls.conf and, with o set, configures the certificates.
func newEdgeTLS(o *TLSOptions, runDir, challengeListen string, applier *configApplier, metrics *Metrics, log zerolog.Logger) (*edgeTLS, error) {
	m := &edgeTLS{applier: applier, metrics: metrics, log: log}
	certDir := filepath.Join(runDir, "certs")
	if o != nil && o.CertDir != "" {
		certDir = o.CertDir
	}
	conf, err := renderTLSConf(o, certDir, challengeListen)
	if err != nil {
		return nil, err
	}
	m.tlsFile = fileChange{Path: filepath.Join(runDir, "tls.conf"), Data: conf}
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

// prepare writes tls.conf (and with TLS the certificate pairs) before
// nginx starts.
func (m *edgeTLS) prepare(ctx context.Context) error {
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
func (m *edgeTLS) export(ctx context.Context) (applyOutcome, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch, err := m.certs.Pairs(ctx)
	if err != nil {
		return failed, err
	}
	outcome, err := applyCounted(ctx, m.applier, m.metrics, m.tlsFile, ch)
	if err != nil {
		return outcome, err
	}
	m.certs.Exported(ch)
	m.live(ch)
	if outcome == reloaded {
		for _, p := range ch.pairs {
			m.log.Info().Str("domain", p.name).Str("source", p.source).Str("serial", p.serial).
				Time("not_after", p.notAfter).Msg("certificate exported to nginx")
		}
	}
	return outcome, nil
}

// live reports the pairs nginx reads now.
func (m *edgeTLS) live(ch *pairsChange) {
	for _, p := range ch.pairs {
		m.metrics.certLive(p.name, p.notAfter, p.placeholder)
	}
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
