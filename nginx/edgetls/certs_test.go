package edgetls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sudoku-fcgi/nginx/acmetest"
	"sudoku-fcgi/nginx/conf"
	"sudoku-fcgi/nginx/discover"
	"sudoku-fcgi/nginx/nginxtest"
	"sudoku-fcgi/nginx/proc"
)

const testDomain = "sudoku.test"

// tlsNginxConf is the project layout in miniature: upstream from
// servers.conf, tls.conf at http level, challenges proxied to the edge's
// responder with the Host header kept, and a locations file shared by
// the HTTP and HTTPS servers.
func tlsNginxConf(t *testing.T, dir string, httpPort, challengePort int) (conf, locations string) {
	t.Helper()
	locations = filepath.Join(dir, "locations.conf")
	os.WriteFile(locations, []byte(`
location / {
    proxy_pass http://backends;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
}
`), 0o644)
	conf = nginxtest.WriteConf(t, dir, 2, 256, fmt.Sprintf(`
    upstream backends {
        zone backends 64k;
        include %[1]s/servers.conf;
        keepalive 8;
    }
    include %[1]s/tls.conf;
    server {
        listen 127.0.0.1:%[2]d;
        location /.well-known/acme-challenge/ {
            proxy_pass http://127.0.0.1:%[3]d;
            proxy_set_header Host $host;
        }
        include %[4]s;
    }
`, dir, httpPort, challengePort, locations))
	return conf, locations
}

// TestCertManagerPebble obtains a certificate from an in-process Pebble over
// real HTTP-01 through the host's nginx, serves it over HTTPS, renews it
// under steady load with no failed request, and restarts from storage.
func TestCertManagerPebble(t *testing.T) {
	bin := nginxtest.NeedNginx(t)
	dir := t.TempDir()
	httpPort, httpsPort, chPort := nginxtest.FreePort(t), nginxtest.FreePort(t), nginxtest.FreePort(t)
	pebble := acmetest.Start(t, httpPort)
	cf, locations := tlsNginxConf(t, dir, httpPort, chPort)
	logger := nginxtest.Logger(t)

	back := discover.TCPAddr(nginxtest.Backend(t, "hello"))
	servers, _, err := conf.UpstreamFiles{}.Render([]discover.Addr{back}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.WriteFileAtomic(filepath.Join(dir, "servers.conf"), servers, 0o644); err != nil {
		t.Fatal(err)
	}
	p := &proc.Process{Bin: bin, Prefix: dir, Conf: cf, Stdout: os.Stderr, Stderr: os.Stderr}
	applier := &proc.Applier{Checker: p, Reloader: p, Log: logger}

	opts := &Options{
		Domains: []string{testDomain}, Email: "ops@sudoku.test", CA: pebble.URL, TrustedRoots: pebble.Trust,
		StoragePath: filepath.Join(dir, "acme"), CertDir: filepath.Join(dir, "certs"),
		HTTPSListen: fmt.Sprintf("127.0.0.1:%d", httpsPort), HTTPListen: fmt.Sprintf("127.0.0.1:%d", httpPort),
		Locations: locations, HSTS: true, HSTSMaxAge: 300,
	}
	newManager := func() *Manager {
		m, err := New(opts, dir, fmt.Sprintf("127.0.0.1:%d", chPort), applier, nil, logger)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	et := newManager()
	m := et.certs
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := et.Prepare(ctx); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	chSrv, err := nginxtest.ServeHTTP(logger, "challenge responder", fmt.Sprintf("127.0.0.1:%d", chPort), m.HTTPChallengeHandler(http.NotFoundHandler()))
	if err != nil {
		t.Fatal(err)
	}
	defer chSrv.Close()
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { p.Quit(); p.Wait() }()

	addr := fmt.Sprintf("127.0.0.1:%d", httpsPort)
	// Before the first certificate nginx serves the placeholder.
	nginxtest.WaitUntil(t, 5*time.Second, "nginx serves the placeholder", func() error {
		leaf, err := nginxtest.ServedCert(addr, testDomain, nil)
		if err == nil && !strings.Contains(strings.Join(leaf.Subject.Organization, ""), "placeholder") {
			return fmt.Errorf("served %v, want the placeholder", leaf.Subject)
		}
		return err
	})

	go et.Run(ctx, nil)
	defer m.Stop()
	var first *x509.Certificate
	nginxtest.WaitUntil(t, 60*time.Second, "nginx serves a certificate that Pebble issued", func() error {
		first, err = nginxtest.ServedCert(addr, testDomain, pebble.Roots)
		return err
	})
	t.Logf("first certificate: serial %x, not after %v", first.SerialNumber, first.NotAfter)

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pebble.Roots, ServerName: testDomain},
	}}
	// A reload is not atomic: until the old worker processes have taken
	// their QUIT, a new connection may still meet one of them and the
	// placeholder.
	var resp *http.Response
	nginxtest.WaitUntil(t, 10*time.Second, "GET over HTTPS with Pebble's root", func() (err error) {
		resp, err = client.Get("https://" + addr + "/")
		return err
	})
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello" || resp.Header.Get("Strict-Transport-Security") != "max-age=300" {
		t.Errorf("GET over HTTPS = %d %q HSTS %q, want 200 hello max-age=300",
			resp.StatusCode, body, resp.Header.Get("Strict-Transport-Security"))
	}

	// Forced renewal under steady load: every request must succeed.
	// Each client tallies its own requests and hands the tally over when
	// the load stops.
	type tally struct {
		ok, failed int
		firstErr   error
	}
	const clients = 4
	tallies := make(chan tally, clients)
	loadCtx, stopLoad := context.WithCancel(ctx)
	for i := range clients {
		go func() {
			var r tally
			defer func() { tallies <- r }()
			tr := &http.Transport{
				TLSClientConfig:   &tls.Config{RootCAs: pebble.Roots, ServerName: testDomain},
				DisableKeepAlives: i%2 == 0, // half the clients handshake on every request
			}
			defer tr.CloseIdleConnections()
			c := &http.Client{Timeout: 5 * time.Second, Transport: tr}
			for loadCtx.Err() == nil {
				resp, err := c.Get("https://" + addr + "/")
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || string(b) != "hello" {
						err = fmt.Errorf("status %d body %q", resp.StatusCode, b)
					}
				}
				switch {
				case err == nil:
					r.ok++
				case r.firstErr == nil:
					r.firstErr = err
					fallthrough
				default:
					r.failed++
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	if err := m.Renew(ctx, testDomain, true); err != nil {
		t.Fatalf("forced renewal: %v", err)
	}
	if _, err := et.export(ctx); err != nil {
		t.Fatalf("export after the renewal: %v", err)
	}
	var second *x509.Certificate
	nginxtest.WaitUntil(t, 10*time.Second, "nginx serves the renewed certificate", func() error {
		second, err = nginxtest.ServedCert(addr, testDomain, pebble.Roots)
		if err == nil && second.SerialNumber.Cmp(first.SerialNumber) == 0 {
			return fmt.Errorf("still serial %x", second.SerialNumber)
		}
		return err
	})
	time.Sleep(300 * time.Millisecond)
	stopLoad()
	var sum tally
	for range clients {
		r := <-tallies
		sum.ok, sum.failed = sum.ok+r.ok, sum.failed+r.failed
		if sum.firstErr == nil {
			sum.firstErr = r.firstErr
		}
	}
	t.Logf("renewed: serial %x; load during renewal: %d ok, %d failed", second.SerialNumber, sum.ok, sum.failed)
	if sum.failed > 0 || sum.ok == 0 {
		t.Errorf("requests during renewal: %d ok, %d failed (first error: %v), want all ok", sum.ok, sum.failed, sum.firstErr)
	}

	versions, _ := filepath.Glob(filepath.Join(dir, "certs", "v*"))
	if len(versions) > 2 {
		t.Errorf("export directory keeps %d versions, want at most 2: %v", len(versions), versions)
	}

	// A restart finds the certificate in storage: nginx starts with it,
	// not with a placeholder, and nothing is re-issued.
	m.Stop()
	et2 := newManager()
	defer et2.Stop()
	if err := et2.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	got := et2.certs.exportedPair(testDomain)
	if got == nil || got.serial != second.SerialNumber.Text(16) {
		t.Errorf("after restart the exported pair is %+v, want serial %x from storage", got, second.SerialNumber)
	}
}

// TestSharedStorageOrdersOnce: two edges whose certmagic storage is one
// directory (a volume both mount) order one certificate between them,
// under certmagic's lock in that storage, and both load it; two with
// storages of their own order one each.
func TestSharedStorageOrdersOnce(t *testing.T) {
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			dir := t.TempDir()
			httpPort := nginxtest.FreePort(t)
			pebble := acmetest.Start(t, httpPort)
			var edges []*certManager
			for i := range 2 {
				storage := filepath.Join(dir, "acme")
				if !shared {
					storage += strconv.Itoa(i)
				}
				m, err := newCertManager(certOptions{Domains: []string{testDomain}, CA: pebble.URL, TrustedRoots: pebble.Trust,
					StoragePath: storage, ExportDir: filepath.Join(dir, "certs"+strconv.Itoa(i)), ChallengePort: httpPort},
					nginxtest.Logger(t).With().Int("edge", i).Logger())
				if err != nil {
					t.Fatal(err)
				}
				defer m.Stop()
				edges = append(edges, m)
			}
			// The port Pebble validates on: each edge's responder in turn,
			// as nginx would reach one edge or the other.
			responder, err := nginxtest.ServeHTTP(nginxtest.Logger(t), "challenge responder", fmt.Sprintf("127.0.0.1:%d", httpPort),
				edges[0].HTTPChallengeHandler(edges[1].HTTPChallengeHandler(http.NotFoundHandler())))
			if err != nil {
				t.Fatal(err)
			}
			defer responder.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var serials []string
			obtained := func(i int) {
				select {
				case <-edges[i].Due():
				case <-ctx.Done():
					t.Fatalf("edge %d has no certificate after 60 s", i)
				}
				p, err := edges[i].storedPair(ctx, testDomain)
				if err != nil || p == nil {
					t.Fatalf("edge %d: stored pair %v, %v", i, p, err)
				}
				serials = append(serials, p.serial)
			}
			// With storages of their own the edges run one after the other:
			// certmagic keeps the challenges it solves in memory by name,
			// once per process, and two in one process would overwrite each
			// other's (two edges are two processes).
			for i, m := range edges {
				if err := m.Run(ctx); err != nil {
					t.Fatal(err)
				}
				if !shared {
					obtained(i)
				}
			}
			if shared {
				obtained(0)
				obtained(1)
			}
			want := int64(2)
			if shared {
				want = 1
			}
			if got := pebble.Orders(); got != want || (serials[0] == serials[1]) != shared {
				t.Errorf("%d orders, serials %v; want %d orders and the serials equal: %v", got, serials, want, shared)
			}
		})
	}
}
