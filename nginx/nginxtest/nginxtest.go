// Package nginxtest holds support code shared by the tests of nginx,
// cmd/sudoku-edge and tests/*: finding the host's nginx, picking free
// loopback ports, writing host nginx.conf files, reading the certificate
// nginx serves, running a command in the background, logging to the test
// and requiring the environment an end-to-end run sets, plus stand-ins for
// a worker (Backend) and for sudoku-edge's HTTP listeners (ServeHTTP).
//
// It is for tests only; no production code may import it.
package nginxtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// NeedNginx returns the host's nginx binary. Without one the test is
// skipped, or fails under CI=true.
func NeedNginx(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("nginx not found under CI: %v", err)
		}
		t.Skipf("nginx not installed: %v", err)
	}
	return bin
}

// Ports for FreePort: below Linux's ephemeral range (32768 and up), where
// outgoing connections would take them, and above the fixed ports of the
// project's scripts.
const (
	firstPort = 31000
	lastPort  = 32767
)

var (
	portsMu sync.Mutex
	given   = map[int]bool{} // ports FreePort returned: never twice in a process
	held    []*os.File       // the locks of given ports, held until the process exits
)

// reserve takes port p for this process: an exclusive lock on a file named
// for it in the temporary directory, which the kernel drops when the
// process exits. go test runs packages' test binaries at once, and
// without it two of them could pick the same port: one nginx then fails
// to bind while the test dials the other's.
func reserve(p int) bool {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("nginxtest-ports-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(p)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	held = append(held, f)
	return true
}

// FreePort finds a free loopback port in 31000-32767 that no test process
// running now has taken (reserve) and this one has not returned before.
func FreePort(t testing.TB) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 100 {
		p := firstPort + rand.IntN(lastPort-firstPort+1)
		if given[p] || !reserve(p) {
			continue
		}
		given[p] = true
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			ln.Close()
			return p
		}
	}
	t.Fatalf("no free port in %d-%d", firstPort, lastPort)
	return 0
}

// WriteConf writes dir/nginx.conf for a host nginx run as root with its
// pid file and temp paths in dir, and returns its path. http is the rest
// of the http block (upstreams, includes, servers), starting with a newline.
// workers 0 leaves worker_processes out, for a supervisor that sets it.
func WriteConf(t testing.TB, dir string, workers, connections int, http string) string {
	t.Helper()
	wp := ""
	if workers > 0 {
		wp = fmt.Sprintf("worker_processes %d;", workers)
	}
	conf := fmt.Sprintf(`
%[2]s
user root;
error_log stderr warn;
pid %[1]s/nginx.pid;
events { worker_connections %[3]d; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;%[4]s}
`, dir, wp, connections, http)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ServedCert connects to addr with SNI name and returns the leaf nginx
// presents, verified against roots (nil skips verification).
func ServedCert(addr, name string, roots *x509.CertPool) (*x509.Certificate, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr,
		&tls.Config{ServerName: name, RootCAs: roots, InsecureSkipVerify: roots == nil})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// WaitUntil polls f every 100ms until it returns nil, and fails the test
// if it has not within timeout. A long wait says what it waits for every
// 10 s, and how long it took once it is over.
func WaitUntil(t testing.TB, timeout time.Duration, what string, f func() error) {
	t.Helper()
	start := time.Now()
	next := start.Add(10 * time.Second)
	for {
		err := f()
		if err == nil {
			if d := time.Since(start); d > time.Second {
				t.Logf("%s after %v", what, d.Round(100*time.Millisecond))
			}
			return
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		if time.Now().After(next) {
			t.Logf("still waiting for: %s (%v)", what, err)
			next = next.Add(10 * time.Second)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Answers200 GETs url and returns nil for a 200, else what came instead:
// a condition for WaitUntil.
func Answers200(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s = %s", url, resp.Status)
	}
	return nil
}

// RequireEnv returns the environment variable name, which the end-to-end
// script sets. Without it the test is skipped, or fails under CI=true.
func RequireEnv(t testing.TB, name, script, makeTarget string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not set under CI: run this through %s", name, script)
		}
		t.Skipf("%s not set: run this through %s (make %s)", name, script, makeTarget)
	}
	return v
}

// Logger returns a logger that writes to the test's output under -v and
// nowhere otherwise.
func Logger(t testing.TB) zerolog.Logger {
	if testing.Verbose() {
		return zerolog.New(t.Output())
	}
	return zerolog.Nop()
}

// Background runs f, such as a command's run or a supervisor's Run, in its
// own goroutine; the channel receives its error.
func Background(f func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	return done
}

// Running fails the test at once when the run behind done has returned.
func Running(t testing.TB, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s returned early: %v", what, err)
	default:
	}
}

// Returned waits up to timeout for the run behind done to return and
// gives its error; it fails the test when the run does not return.
func Returned(t testing.TB, done <-chan error, timeout time.Duration, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		t.Fatalf("%s did not return within %v", what, timeout)
		return nil
	}
}

// Backend starts an HTTP server that answers body to every request until
// the test ends, and returns its address.
func Backend(t testing.TB, body string) netip.AddrPort {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return netip.MustParseAddrPort(strings.TrimPrefix(s.URL, "http://"))
}

// ServeHTTP stands in for cli.ServeHTTP, which nothing under nginx/ may
// import, not even its tests: it serves h on addr until the server is
// closed, through httptest, and names the listener name in its error.
func ServeHTTP(_ zerolog.Logger, name, addr string, h http.Handler) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	return srv.Config, nil
}

// ProxyConf writes a minimal host nginx.conf (WriteConf, with workers
// worker processes; 0 leaves them to sudoku-edge) whose upstream includes
// runDir/servers.conf and whose server on 127.0.0.1:port proxies every
// request to it; http and server are further directives for the http and
// server blocks.
func ProxyConf(t testing.TB, workers int, dir, runDir string, port int, http, server string) string {
	t.Helper()
	return WriteConf(t, dir, workers, 256, fmt.Sprintf(`
    upstream backends {
        zone backends 64k;
        random two least_conn;
        include %[1]s/servers.conf;
        keepalive 8;
    }%[3]s
    server {
        listen 127.0.0.1:%[2]d;%[4]s
        location / {
            proxy_pass http://backends;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
`, runDir, port, http, server))
}

// Resolver answers LookupHost from a map that a test changes between
// calls, as discovery's resolver; a host it does not hold is not found.
type Resolver struct {
	mu      sync.Mutex
	answers map[string][]string
	err     error
	calls   int
}

// NewResolver answers with answers (host -> addresses) and err.
func NewResolver(answers map[string][]string, err error) *Resolver {
	if answers == nil {
		answers = map[string][]string{}
	}
	return &Resolver{answers: answers, err: err}
}

// LookupHost answers host, or the error set.
func (r *Resolver) LookupHost(ctx context.Context, host string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.err != nil {
		return nil, r.err
	}
	a, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return a, nil
}

// Set answers host with addrs from now on; no addrs: not found.
func (r *Resolver) Set(host string, addrs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if addrs == nil {
		delete(r.answers, host)
		return
	}
	r.answers[host] = addrs
}

// SetErr fails every lookup with err from now on; nil ends that.
func (r *Resolver) SetErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// Calls counts the lookups so far.
func (r *Resolver) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}
