package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	stdfcgi "net/http/fcgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sudoku-fcgi/nginx/acmetest"
	"sudoku-fcgi/nginx/nginxtest"
)

// fcgiWorker serves FastCGI like a sudoku-fcgi worker would, answering
// every request with its id.
func fcgiWorker(t *testing.T, id string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go stdfcgi.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Sudoku-Worker", id)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"worker":"`+id+`"}`)
	}))
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// renderHostConf renders the project's real nginx config for the host with
// the stack's nginx/render-host.sh.
func renderHostConf(t *testing.T, dir string, httpPort, statusPort, acmePort int) string {
	t.Helper()
	script, _ := filepath.Abs("../../nginx/render-host.sh")
	out, err := exec.Command("bash", script, dir, fmt.Sprint(httpPort), fmt.Sprint(statusPort), fmt.Sprint(acmePort)).CombinedOutput()
	if err != nil {
		t.Fatalf("render-host.sh: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// edgeRun is one run of the command in a test: nginx bin with the config
// conf under dir, the public listeners on the ports http and status, the
// ACME challenge listener on acme, and the FastCGI worker worker.
type edgeRun struct {
	bin, dir, conf, worker string
	http, status, acme     int
}

// start runs the command in the background with those flags, the flags
// extra and the environment e; cancelling ctx stops it.
func (r edgeRun) start(ctx context.Context, e env, extra ...string) <-chan error {
	args := append([]string{
		"-nginx", r.bin, "-nginx-prefix", r.dir, "-nginx-conf", r.conf, "-run-dir", filepath.Join(r.dir, "run"),
		"-status-listen", fmt.Sprintf("127.0.0.1:%d", r.status), "-http-listen", fmt.Sprintf("127.0.0.1:%d", r.http),
		"-workers", r.worker,
		"-challenge-listen", fmt.Sprintf("127.0.0.1:%d", r.acme),
	}, extra...)
	return nginxtest.Background(func() error { return run(ctx, args, e.get, io.Discard) })
}

// TestRunTLSWithPebble runs sudoku-edge with the project's nginx config and
// TLS on against an in-process Pebble: the certificate comes over HTTP-01
// through nginx, HTTPS reaches the FastCGI worker, plain HTTP for the name
// redirects, SIGUSR1 renews and nginx serves the new serial.
func TestRunTLSWithPebble(t *testing.T) {
	bin := nginxtest.NeedNginx(t)
	dir := t.TempDir()
	httpPort, statusPort, acmePort, httpsPort := nginxtest.FreePort(t), nginxtest.FreePort(t), nginxtest.FreePort(t), nginxtest.FreePort(t)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", nginxtest.FreePort(t))
	conf := renderHostConf(t, dir, httpPort, statusPort, acmePort)
	ca := acmetest.Start(t, httpPort)
	worker := fcgiWorker(t, "w1")
	const domain = "sudoku.test"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	edge := edgeRun{bin: bin, dir: dir, conf: conf, worker: worker, http: httpPort, status: statusPort, acme: acmePort}
	done := edge.start(ctx, env{
		"SUDOKU_EDGE_TLS_DOMAINS":       domain,
		"SUDOKU_EDGE_TLS_EMAIL":         "ops@sudoku.test",
		"SUDOKU_EDGE_TLS_CA":            ca.URL,
		"SUDOKU_EDGE_TLS_CA_ROOT":       ca.WriteTrust(t, dir),
		"SUDOKU_EDGE_TLS_STORAGE":       filepath.Join(dir, "acme"),
		"SUDOKU_EDGE_TLS_LISTEN":        fmt.Sprintf("127.0.0.1:%d", httpsPort),
		"SUDOKU_EDGE_HTTP_LISTEN":       fmt.Sprintf("127.0.0.1:%d", httpPort),
		"SUDOKU_EDGE_TLS_LOCATIONS":     filepath.Join(dir, "sudoku-locations.conf"),
		"SUDOKU_EDGE_TLS_REDIRECT":      "true",
		"SUDOKU_EDGE_TLS_REDIRECT_PORT": fmt.Sprint(httpsPort),
		"SUDOKU_EDGE_TLS_HSTS":          "true",
		"SUDOKU_EDGE_LOG_LEVEL":         "warn",
		"SUDOKU_EDGE_METRICS_LISTEN":    metricsAddr,
	})

	httpsAddr := fmt.Sprintf("127.0.0.1:%d", httpsPort)
	serial := func() (string, error) {
		nginxtest.Running(t, done, "run")
		cert, err := nginxtest.ServedCert(httpsAddr, domain, ca.Roots)
		if err != nil {
			return "", err
		}
		return cert.SerialNumber.Text(16), nil
	}
	var first string
	nginxtest.WaitUntil(t, 60*time.Second, "nginx serves a certificate Pebble issued", func() (err error) {
		first, err = serial()
		return err
	})

	client := &http.Client{
		Timeout:       5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: ca.Roots},
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				// sudoku.test is loopback here.
				_, port, _ := net.SplitHostPort(addr)
				return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
			},
		},
	}
	resp, err := client.Get(fmt.Sprintf("https://%s:%d/sudoku/stats", domain, httpsPort))
	if err != nil {
		t.Fatalf("GET over HTTPS: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Sudoku-Worker") != "w1" ||
		resp.Header.Get("Strict-Transport-Security") == "" || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("GET https /sudoku/stats = %d %q, headers %v; want 200 from w1 with HSTS and X-Request-Id",
			resp.StatusCode, body, resp.Header)
	}
	if resp.TLS.Version != tls.VersionTLS13 {
		t.Errorf("negotiated TLS version %x, want TLS 1.3", resp.TLS.Version)
	}
	// The metrics listener reports when the served certificate expires.
	cert, err := nginxtest.ServedCert(httpsAddr, domain, ca.Roots)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("sudoku_edge_certificate_expiry_timestamp_seconds{domain=%q} %g\n", domain, float64(cert.NotAfter.Unix()))
	nginxtest.WaitUntil(t, 10*time.Second, "the expiry of the issued certificate on /metrics", func() error {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), want) {
			return fmt.Errorf("/metrics lacks %q", want)
		}
		return nil
	})
	// TLS 1.1 is refused.
	if c, err := tls.Dial("tcp", httpsAddr, &tls.Config{ServerName: domain, RootCAs: ca.Roots, MaxVersion: tls.VersionTLS11}); err == nil {
		c.Close()
		t.Error("a TLS 1.1 handshake succeeded, want it refused")
	}

	// nginx's own error answers carry HSTS too.
	resp, err = client.Get(fmt.Sprintf("https://%s:%d/nope", domain, httpsPort))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Strict-Transport-Security") != "max-age=63072000" || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("GET https /nope = %d, headers %v; want 404 with HSTS max-age=63072000 and X-Request-Id", resp.StatusCode, resp.Header)
	}

	resp, err = client.Get(fmt.Sprintf("http://%s:%d/sudoku?x=1", domain, httpPort))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := fmt.Sprintf("https://%s:%d/sudoku?x=1", domain, httpsPort); resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != want {
		t.Errorf("GET http for the TLS name = %d to %q, want 308 to %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	resp, err = client.Get(fmt.Sprintf("http://127.0.0.1:%d/sudoku/stats", httpPort))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET http by address = %d, want 200 (only the TLS names redirect)", resp.StatusCode)
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	nginxtest.WaitUntil(t, 30*time.Second, "nginx serves the renewed certificate after SIGUSR1", func() error {
		s, err := serial()
		if err == nil && s == first {
			return fmt.Errorf("still serial %s", s)
		}
		return err
	})

	cancel()
	if err := nginxtest.Returned(t, done, 15*time.Second, "run after cancel"); err != nil {
		t.Errorf("run after cancel = %v, want nil", err)
	}
}

// TestTLSFlags checks validation of the TLS flags.
func TestTLSFlags(t *testing.T) {
	bad := map[string][]string{
		"wildcard (HTTP-01 cannot)": {"-tls-domains", "*.example.com"},
		"duplicate name":            {"-tls-domains", "a.example.com,a.example.com"},
		"plain http CA":             {"-tls-domains", "a.example.com", "-tls-ca", "http://ca.example/dir"},
		"bad redirect port":         {"-tls-domains", "a.example.com", "-tls-redirect-port", "0"},
		"negative HSTS":             {"-tls-domains", "a.example.com", "-tls-hsts-max-age", "-1"},
		"two edges, storages apart": {"-tls-domains", "a.example.com", "-replicas", "2"},
		"no edge":                   {"-replicas", "0"},
	}
	for name, args := range bad {
		t.Run(name, func(t *testing.T) {
			if _, err := parseConfig(args, env{}.get, io.Discard); err == nil {
				t.Errorf("parseConfig(%q) accepted it", args)
			}
		})
	}
	c := mustParse(t, nil, env{"SUDOKU_EDGE_TLS_DOMAINS": " a.example.com, b.example.com "})
	if o := c.sup.Config.TLS; o == nil || !c.tls.on() || o.CA != "https://acme-v02.api.letsencrypt.org/directory" || o.StoragePath != "/var/lib/sudoku-edge/acme" ||
		strings.Join(o.Domains, ",") != "a.example.com,b.example.com" {
		t.Errorf("parseConfig with domains = %+v", o)
	}
	for _, args := range [][]string{{"-replicas", "2"}, {"-tls-domains", "a.example.com", "-replicas", "2", "-tls-storage-shared"}} {
		if _, err := parseConfig(args, env{}.get, io.Discard); err != nil {
			t.Errorf("parseConfig(%q) = %v, want it accepted", args, err)
		}
	}
	if c, _ := parseConfig(nil, env{}.get, io.Discard); c.tls.on() || c.sup.Config.TLS != nil {
		t.Error("TLS is on without domains")
	}
}
