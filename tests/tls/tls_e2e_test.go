//go:build e2e

// Package tlse2e checks TLS on the compose stack with Pebble as the CA. Run
// it through tests/tls/run.sh (make test-tls), which starts the stack with
// tests/tls/compose.tls.yml and passes its addresses in SUDOKU_E2E_*.
package tlse2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"sudoku-fcgi/cmd/sudoku-load/load"
	"sudoku-fcgi/cmd/sudoku-load/load/loadtest"
	"sudoku-fcgi/nginx/nginxtest"
)

const (
	domain = "sudoku.test"
	puzzle = "000000010400000000020000000000050407008000300001090000300400200050100000000806000"
)

// need returns the environment variable name that tests/tls/run.sh sets.
func need(t *testing.T, name string) string {
	t.Helper()
	return nginxtest.RequireEnv(t, name, "tests/tls/run.sh", "test-tls")
}

// pebbleRoot fetches the issuing root from Pebble's management API (it is
// regenerated on every Pebble start).
func pebbleRoot(t *testing.T, mgmt, listenerPEM string) *x509.CertPool {
	t.Helper()
	pemBytes, err := os.ReadFile(listenerPEM)
	if err != nil {
		t.Fatal(err)
	}
	trust := x509.NewCertPool()
	trust.AppendCertsFromPEM(pemBytes)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: trust}}}
	resp, err := c.Get(mgmt + "/roots/0")
	if err != nil {
		t.Fatalf("fetching Pebble's root: %v", err)
	}
	defer resp.Body.Close()
	root, _ := io.ReadAll(resp.Body)
	pool := x509.NewCertPool()
	if resp.StatusCode != 200 || !pool.AppendCertsFromPEM(root) {
		t.Fatalf("Pebble's /roots/0: status %d, %q", resp.StatusCode, root)
	}
	return pool
}

// client talks to sudoku.test at addr (the published HTTPS port), trusting
// only Pebble's root.
func client(addr string, roots *x509.CertPool, keepAlive bool) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, ServerName: domain},
		DisableKeepAlives: !keepAlive,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
}

func serial(addr string, roots *x509.CertPool) (string, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", addr,
		&tls.Config{ServerName: domain, RootCAs: roots})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Text(16), nil
}

// trustsSystemStoreOnly fails the test unless the edge in container is left
// to the system store for the ACME server's TLS: no -tls-ca-root (flag or
// SUDOKU_EDGE_TLS_CA_ROOT) and no SSL_CERT_FILE or SSL_CERT_DIR moving Go's
// system roots elsewhere, and the image's CA bundle is there. Pebble's
// listener certificate is a file in /etc/ssl/certs (compose.tls.yml), so a
// certificate issued afterwards proves certmagic verified the ACME server
// against /etc/ssl/certs, the store that holds Let's Encrypt's roots.
func trustsSystemStoreOnly(t *testing.T, container string) {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "-f", "{{json .Config}}", container).Output()
	if err != nil {
		t.Fatalf("docker inspect %s: %v", container, err)
	}
	var cfg struct{ Env, Cmd, Entrypoint []string }
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatalf("docker inspect %s: %v", container, err)
	}
	for _, kv := range cfg.Env {
		name, value, _ := strings.Cut(kv, "=")
		switch name {
		case "SUDOKU_EDGE_TLS_CA_ROOT", "SSL_CERT_FILE", "SSL_CERT_DIR":
			if value != "" {
				t.Fatalf("the edge runs with %s: it must trust Pebble through the system store alone", kv)
			}
		}
	}
	for _, arg := range append(cfg.Entrypoint, cfg.Cmd...) {
		if strings.Contains(arg, "tls-ca-root") {
			t.Fatalf("the edge runs with %q: it must trust Pebble through the system store alone", arg)
		}
	}
	if out, err := exec.Command("docker", "exec", container, "test", "-s", "/etc/ssl/certs/ca-certificates.crt").CombinedOutput(); err != nil {
		t.Fatalf("no CA bundle /etc/ssl/certs/ca-certificates.crt in the nginx image: %v %s", err, out)
	}
}

// TestCertificateAndRenewal: sudoku-edge, trusting only the system store,
// got a certificate from Pebble over HTTP-01 through nginx; HTTPS with
// Pebble's root reaches a worker; a forced renewal (SIGUSR1 to sudoku-edge)
// under steady load makes nginx serve a new serial and no request fails.
func TestCertificateAndRenewal(t *testing.T) {
	addr := need(t, "SUDOKU_E2E_HTTPS")
	roots := pebbleRoot(t, need(t, "SUDOKU_E2E_PEBBLE_MGMT"), need(t, "SUDOKU_E2E_PEBBLE_LISTENER"))
	container := need(t, "SUDOKU_E2E_NGINX_CONTAINER")
	trustsSystemStoreOnly(t, container)

	var first string
	// certmagic retries a failed first attempt after a minute.
	nginxtest.WaitUntil(t, 150*time.Second, "nginx serves a certificate Pebble issued", func() (err error) {
		first, err = serial(addr, roots)
		return err
	})
	t.Logf("serial before renewal: %s", first)

	url := "https://" + domain + "/sudoku?puzzle=" + puzzle
	resp, err := client(addr, roots, false).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Sudoku-Worker") == "" || resp.Header.Get("Strict-Transport-Security") == "" {
		t.Fatalf("GET over HTTPS = %d %q, headers %v; want 200 from a worker with HSTS", resp.StatusCode, body, resp.Header)
	}
	t.Logf("HTTPS answer (%s): %s", tls.CipherSuiteName(resp.TLS.CipherSuite), body)

	// 400 requests/s over 8 connections: half keep their connection, half
	// handshake every time.
	keep, fresh := client(addr, roots, true), client(addr, roots, false)
	cl, err := load.NewClient(load.ClientConfig{URL: "https://" + domain,
		HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: loadtest.Alternate(keep.Transport, fresh.Transport)}})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := load.ReadPuzzles(strings.NewReader(puzzle))
	if err != nil {
		t.Fatal(err)
	}
	var ws load.Workers
	// 80 requests/s: one client within nginx's per-client limit (100 r/s).
	stopLoad := load.Background(context.Background(), load.LoadConfig{Client: cl, Puzzles: ps, Conns: 8, Rate: 80,
		Duration: time.Hour, OnSample: ws.Record})
	stop := func() load.WorkerTally {
		_, _ = stopLoad() // the tally holds every request's fate
		return ws.Tally()
	}
	time.Sleep(2 * time.Second)
	if out, err := exec.Command("docker", "kill", "-s", "USR1", container).CombinedOutput(); err != nil {
		stop()
		t.Fatalf("docker kill -s USR1: %v: %s", err, out)
	}
	var second string
	nginxtest.WaitUntil(t, 60*time.Second, "nginx serves the renewed certificate", func() (err error) {
		second, err = serial(addr, roots)
		if err == nil && second == first {
			err = errors.New("still serial " + second)
		}
		return err
	})
	time.Sleep(2 * time.Second)
	res := stop()
	t.Logf("serial after renewal: %s; load during renewal: %v", second, res)
	if res.Failed > 0 || res.OK == 0 {
		t.Errorf("requests during the renewal: %v, errors %q; want no failure", res, res.Errors)
	}
}
