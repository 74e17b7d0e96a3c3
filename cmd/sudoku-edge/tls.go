package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/caddyserver/certmagic"
	"github.com/rs/zerolog"

	"sudoku-fcgi/nginx"
)

// tlsFlags holds the TLS flags. With no domains TLS is off and nothing
// reaches out to any CA.
type tlsFlags struct {
	domains      string
	email        string
	ca           string
	caRoot       string
	storage      string
	certDir      string
	listen       string
	httpListen   string
	locations    string
	redirect     bool
	redirectPort int
	hsts         bool
	hstsMaxAge   int
}

func (t *tlsFlags) register(fs envFlagSet) {
	fs.StringVar(&t.domains, "tls-domains", "", "comma-separated `names` to serve over HTTPS with ACME certificates; empty turns TLS off")
	fs.StringVar(&t.email, "tls-email", "", "ACME account contact `address` (expiry notices)")
	fs.StringVar(&t.ca, "tls-ca", certmagic.LetsEncryptProductionCA, "ACME directory `URL` (Let's Encrypt staging: "+certmagic.LetsEncryptStagingCA+")")
	fs.StringVar(&t.caRoot, "tls-ca-root", "", "PEM `file` with an extra root to trust for the ACME server's own TLS (test CAs such as Pebble)")
	fs.StringVar(&t.storage, "tls-storage", "/var/lib/sudoku-edge/acme", "certmagic storage `directory` (accounts, keys, certificates); put it on a volume")
	fs.StringVar(&t.certDir, "tls-cert-dir", "", "`directory` for the PEM pairs nginx reads (versioned, with a live symlink); default <run-dir>/certs")
	fs.StringVar(&t.listen, "tls-listen", "8443", "nginx listen `address` of the HTTPS server")
	fs.StringVar(&t.httpListen, "http-listen", "8080", "nginx listen `address` of the plain HTTP server (for -tls-redirect)")
	fs.StringVar(&t.locations, "tls-locations", "/etc/nginx/sudoku-locations.conf", "nginx `file` with the public locations, included by the HTTPS server")
	fs.BoolVar(&t.redirect, "tls-redirect", false, "redirect plain HTTP for the TLS names to HTTPS (308), ACME challenges excepted")
	fs.IntVar(&t.redirectPort, "tls-redirect-port", 443, "public HTTPS `port` used in redirects")
	fs.BoolVar(&t.hsts, "tls-hsts", false, "send Strict-Transport-Security over HTTPS")
	fs.IntVar(&t.hstsMaxAge, "tls-hsts-max-age", 63072000, "HSTS max-age in `seconds`")
}

func (t *tlsFlags) on() bool { return len(splitList(t.domains)) > 0 }

func (t *tlsFlags) validate() error {
	if !t.on() {
		return nil
	}
	domains := splitList(t.domains)
	for _, d := range domains {
		if err := nginx.CheckDomain(d); err != nil {
			return fmt.Errorf("-tls-domains: %w", err)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(domains)))) != len(domains) {
		return fmt.Errorf("-tls-domains: %q names a domain twice", t.domains)
	}
	u, err := url.Parse(t.ca)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("-tls-ca: %q is not an https URL", t.ca)
	}
	if t.redirectPort < 1 || t.redirectPort > 65535 {
		return fmt.Errorf("-tls-redirect-port: %d is not a port", t.redirectPort)
	}
	if t.hstsMaxAge < 0 {
		return fmt.Errorf("-tls-hsts-max-age: %d is negative", t.hstsMaxAge)
	}
	return nil
}

// tlsManager is the TLS side of run: off, or a CertManager.
type tlsManager struct {
	log     zerolog.Logger
	tlsPath string
	certs   *nginx.CertManager // nil when TLS is off
	domains []string
}

func (t *tlsFlags) build(ctx context.Context, log zerolog.Logger, c config, applier *nginx.Applier, tlsPath string) (*tlsManager, error) {
	m := &tlsManager{log: log, tlsPath: tlsPath}
	if !t.on() {
		return m, nil
	}
	m.domains = splitList(t.domains)
	var roots *x509.CertPool
	if t.caRoot != "" {
		pem, err := os.ReadFile(t.caRoot)
		if err != nil {
			return nil, fmt.Errorf("-tls-ca-root: %w", err)
		}
		if roots, err = x509.SystemCertPool(); err != nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-tls-ca-root: no PEM certificate in %s", t.caRoot)
		}
	}
	_, chPortStr, _ := net.SplitHostPort(c.challengeListen)
	chPort, err := strconv.Atoi(chPortStr)
	if err != nil || chPort == 0 {
		return nil, fmt.Errorf("-challenge-listen: TLS needs a fixed port, got %q", c.challengeListen)
	}
	certDir := t.certDir
	if certDir == "" {
		certDir = filepath.Join(c.runDir, "certs")
	}
	m.certs, err = nginx.NewCertManager(nginx.CertOptions{
		Domains: m.domains, Email: t.email, CA: t.ca, TrustedRoots: roots,
		StoragePath: t.storage, ExportDir: certDir, ChallengePort: chPort, Apply: applier.Apply,
	}, log)
	if err != nil {
		return nil, err
	}
	conf, err := nginx.RenderTLS(nginx.TLSServer{
		Sites: m.certs.Sites(), CA: t.ca, HTTPSListen: t.listen, Locations: t.locations,
		HSTS: t.hsts, HSTSMaxAge: t.hstsMaxAge,
		Redirect: t.redirect, HTTPListen: t.httpListen, ChallengeAddr: c.challengeListen, RedirectPort: t.redirectPort,
	})
	if err != nil {
		return nil, err
	}
	m.certs.SetAlso(nginx.FileChange{Path: tlsPath, Data: conf})
	return m, nil
}

// prepare writes tls.conf (and with TLS the certificate pairs) before
// nginx starts.
func (m *tlsManager) prepare(ctx context.Context) error {
	if m.certs == nil {
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
	if err := m.certs.Prepare(ctx); err != nil {
		return fmt.Errorf("preparing certificates: %w", err)
	}
	m.log.Info().Str("file", m.tlsPath).Strs("domains", m.domains).Msg("TLS is on")
	return nil
}

func (m *tlsManager) challengeHandler() http.Handler {
	if m.certs == nil {
		return http.NotFoundHandler()
	}
	return m.certs.HTTPChallengeHandler(http.NotFoundHandler())
}

// run manages certificates until ctx ends; renew (SIGUSR1) forces a
// renewal of every domain.
func (m *tlsManager) run(ctx context.Context, renew <-chan os.Signal) {
	if m.certs == nil {
		return
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-renew:
			}
			for _, d := range m.domains {
				m.log.Info().Str("domain", d).Msg("forced renewal requested")
				if err := m.certs.Renew(ctx, d, true); err != nil && !errors.Is(err, context.Canceled) {
					m.log.Error().Err(err).Str("domain", d).Msg("forced renewal failed")
				}
			}
		}
	}()
	if err := m.certs.Run(ctx); err != nil {
		m.log.Error().Err(err).Msg("certificate management stopped")
	}
}

func (m *tlsManager) stop() {
	if m.certs != nil {
		m.certs.Stop()
	}
}
