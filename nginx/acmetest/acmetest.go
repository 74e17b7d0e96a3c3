// Package acmetest runs an ACME CA (Pebble) in-process for tests, with a
// DNS server that resolves every name to 127.0.0.1, so that HTTP-01
// validation really connects to a local nginx.
package acmetest

import (
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"
	"github.com/miekg/dns"
)

// CA is a running Pebble.
type CA struct {
	URL   string         // ACME directory
	Trust *x509.CertPool // the directory's own TLS certificate (for the client)
	Roots *x509.CertPool // Pebble's issuing root (to verify issued chains)

	listenerPEM []byte
	orders      atomic.Int64
}

// newOrderPath is where Pebble's directory points newOrder.
const newOrderPath = "/order-plz"

// Orders returns how many new orders the CA has received: one per
// certificate an ACME client asked for.
func (c *CA) Orders() int64 { return c.orders.Load() }

// WriteTrust writes the directory's TLS certificate as PEM into dir and
// returns the file's path (for -tls-ca-root).
func (c *CA) WriteTrust(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "acme-listener.pem")
	if err := os.WriteFile(path, c.listenerPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Start runs Pebble until the test ends. Its validator fetches HTTP-01
// tokens from http://<name>:httpPort, every name resolving to 127.0.0.1.
// It sets environment variables, so tests using it cannot be parallel.
func Start(t testing.TB, httpPort int) *CA {
	t.Helper()
	// Read by va.New and wfe.New: no random sleeps, no rejected nonces, a
	// fresh authorization for every order.
	t.Setenv("PEBBLE_VA_NOSLEEP", "1")
	t.Setenv("PEBBLE_WFE_NONCEREJECT", "0")
	t.Setenv("PEBBLE_AUTHZREUSE", "0")
	logger := log.New(io.Discard, "", 0)
	if testing.Verbose() {
		logger = log.New(t.Output(), "pebble ", 0)
	}
	store := db.NewMemoryStore()
	authority := ca.New(logger, store, "", "ecdsa", 0, 1, map[string]ca.Profile{"default": {Description: "default"}})
	validator := va.New(logger, httpPort, 0, false, loopbackDNS(t), store)
	front := wfe.New(logger, store, validator, authority, []string{"pebble.letsencrypt.org"}, false, false, 1, 1)
	c := &CA{Trust: x509.NewCertPool(), Roots: x509.NewCertPool()}
	handler := front.Handler()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == newOrderPath {
			c.orders.Add(1)
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.URL = srv.URL + "/dir"
	c.Trust.AddCert(srv.Certificate())
	c.Roots.AddCert(authority.GetRootCert(0).Cert)
	c.listenerPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return c
}

// loopbackDNS answers every A query with 127.0.0.1 over TCP (what Pebble's
// custom resolver uses), like pebble-challtestsrv does.
func loopbackDNS(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{Listener: ln, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		for _, q := range r.Question {
			if q.Qtype == dns.TypeA {
				m.Answer = append(m.Answer, &dns.A{
					Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET},
					A:   net.IPv4(127, 0, 0, 1),
				})
			}
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return ln.Addr().String()
}
