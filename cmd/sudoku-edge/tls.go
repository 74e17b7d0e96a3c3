package main

import (
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"sudoku-fcgi/nginx/conf"
	"sudoku-fcgi/nginx/edgetls"
)

// tlsFlags holds the TLS flags (registered with the others in
// parseConfig). With no domains TLS is off and nothing reaches out to any CA.
type tlsFlags struct {
	domains []string // -tls-domains, split once (listFlag)
	caRoot  string
	o       edgetls.Options
	// replicas is how many edges serve the site; above one, each would
	// order its own certificates unless storageShared says that they all
	// mount one -tls-storage (certmagic's locks there let one order and
	// the others load what it stored: edgetls's TestSharedStorageOrdersOnce).
	replicas      int
	storageShared bool
}

func (t *tlsFlags) on() bool { return len(t.domains) > 0 }

func (t *tlsFlags) validate() error {
	if t.replicas < 1 {
		return fmt.Errorf("-replicas: %d, want 1 or more", t.replicas)
	}
	if !t.on() {
		return nil
	}
	if t.replicas > 1 && !t.storageShared {
		return fmt.Errorf("-tls-domains with -replicas %d: each edge would order its own certificates into its own -tls-storage; run one TLS edge, or mount one storage on every edge (a network filesystem) and set -tls-storage-shared", t.replicas)
	}
	domains := t.domains
	for _, d := range domains {
		if err := conf.CheckDomain(d); err != nil {
			return fmt.Errorf("-tls-domains: %w", err)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(domains)))) != len(domains) {
		return fmt.Errorf("-tls-domains: %q names a domain twice", strings.Join(domains, ","))
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
func (t *tlsFlags) options() (*edgetls.Options, error) {
	if !t.on() {
		return nil, nil
	}
	o := t.o
	o.Domains = t.domains
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
