package main

import (
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"slices"

	"github.com/caddyserver/certmagic"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/nginx"
)

// tlsFlags holds the TLS flags. With no domains TLS is off and nothing
// reaches out to any CA.
type tlsFlags struct {
	domains, caRoot string
	o               nginx.TLSOptions
}

func (t *tlsFlags) register(fs *cli.FlagSet) {
	o := &t.o
	fs.StringVar(&t.domains, "tls-domains", "", "comma-separated `names` to serve over HTTPS with ACME certificates; empty turns TLS off")
	fs.StringVar(&o.Email, "tls-email", "", "ACME account contact `address` (expiry notices)")
	fs.StringVar(&o.CA, "tls-ca", certmagic.LetsEncryptProductionCA, "ACME directory `URL` (Let's Encrypt staging: "+certmagic.LetsEncryptStagingCA+")")
	fs.StringVar(&t.caRoot, "tls-ca-root", "", "PEM `file` with an extra root to trust for the ACME server's own TLS (test CAs such as Pebble)")
	fs.StringVar(&o.StoragePath, "tls-storage", "/var/lib/sudoku-edge/acme", "certmagic storage `directory` (accounts, keys, certificates); put it on a volume")
	fs.StringVar(&o.CertDir, "tls-cert-dir", "", "`directory` for the PEM pairs nginx reads (versioned, with a live symlink); empty means <run-dir>/certs")
	fs.StringVar(&o.HTTPSListen, "tls-listen", "8443", "nginx listen `address` of the HTTPS server")
	fs.StringVar(&o.HTTPListen, "http-listen", "8080", "nginx listen `address` of the plain HTTP server (for -tls-redirect)")
	fs.StringVar(&o.Locations, "tls-locations", "/etc/nginx/sudoku-locations.conf", "nginx `file` with the public locations, included by the HTTPS server")
	fs.BoolVar(&o.Redirect, "tls-redirect", false, "redirect plain HTTP for the TLS names to HTTPS (308), ACME challenges excepted")
	fs.IntVar(&o.RedirectPort, "tls-redirect-port", 443, "public HTTPS `port` used in redirects")
	fs.BoolVar(&o.HSTS, "tls-hsts", false, "send Strict-Transport-Security over HTTPS")
	fs.IntVar(&o.HSTSMaxAge, "tls-hsts-max-age", 63072000, "HSTS max-age in `seconds`")
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
	u, err := url.Parse(t.o.CA)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("-tls-ca: %q is not an https URL", t.o.CA)
	}
	if t.o.RedirectPort < 1 || t.o.RedirectPort > 65535 {
		return fmt.Errorf("-tls-redirect-port: %d is not a port", t.o.RedirectPort)
	}
	if t.o.HSTSMaxAge < 0 {
		return fmt.Errorf("-tls-hsts-max-age: %d is negative", t.o.HSTSMaxAge)
	}
	return nil
}

// options returns the supervisor's TLS options, nil when TLS is off, with
// the -tls-ca-root file read.
func (t *tlsFlags) options() (*nginx.TLSOptions, error) {
	if !t.on() {
		return nil, nil
	}
	o := t.o
	o.Domains = splitList(t.domains)
	if t.caRoot != "" {
		pem, err := os.ReadFile(t.caRoot)
		if err != nil {
			return nil, fmt.Errorf("-tls-ca-root: %w", err)
		}
		if o.TrustedRoots, err = x509.SystemCertPool(); err != nil {
			o.TrustedRoots = x509.NewCertPool()
		}
		if !o.TrustedRoots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-tls-ca-root: no PEM certificate in %s", t.caRoot)
		}
	}
	return &o, nil
}
