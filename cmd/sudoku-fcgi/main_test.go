package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestHelpShowsEnvTwins(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-help"}, env(), &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run -help = %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{
		"SUDOKU_LISTEN", "SUDOKU_INTERNAL_LISTEN", "SUDOKU_WORKER_ID", "SUDOKU_POOL", "SUDOKU_QUEUE",
		"SUDOKU_QUEUE_TIMEOUT", "SUDOKU_SOLVE_TIMEOUT", "SUDOKU_BATCH_TIMEOUT", "SUDOKU_MAX_CONNS", "SUDOKU_DRAIN_TIMEOUT",
		"SUDOKU_LOG_LEVEL", "-healthcheck", `(default ":9000")`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-help lacks %q", want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	t.Run("env then flag", func(t *testing.T) {
		c, err := parseFlags([]string{"-pool", "3"}, env("SUDOKU_POOL", "7", "SUDOKU_QUEUE", "5", "SUDOKU_QUEUE_TIMEOUT", "20ms", "SUDOKU_WORKER_ID", "w9"), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if c.pool != 3 || c.queue != 5 || c.queueTimeout != 20*time.Millisecond || c.id != "w9" {
			t.Errorf("config = %+v, want pool 3 (flag), queue 5, 20ms, id w9 (env)", c)
		}
	})
	for _, tt := range []struct {
		name string
		args []string
		env  func(string) string
		want string
	}{
		{"bad env int", nil, env("SUDOKU_POOL", "x"), "SUDOKU_POOL"},
		{"bad env duration", nil, env("SUDOKU_SOLVE_TIMEOUT", "5"), "SUDOKU_SOLVE_TIMEOUT"},
		{"negative", []string{"-queue", "-1"}, env(), ">= 0"},
		{"zero timeout", []string{"-solve-timeout", "0s"}, env(), "> 0"},
		{"zero batch timeout", nil, env("SUDOKU_BATCH_TIMEOUT", "0s"), "-batch-timeout"},
		{"bad id", []string{"-id", "a b"}, env(), "printable"},
		{"extra args", []string{"x"}, env(), "unexpected"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFlags(tt.args, tt.env, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseFlags(%q) = %v, want an error mentioning %q", tt.args, err, tt.want)
			}
		})
	}
}

func TestHealthcheck(t *testing.T) {
	ready := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || !ready {
			w.WriteHeader(503)
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	getenv := env("SUDOKU_INTERNAL_LISTEN", ":"+port)
	if err := run(context.Background(), []string{"-healthcheck"}, getenv, io.Discard); err != nil {
		t.Errorf("healthcheck against a ready worker = %v", err)
	}
	ready = false
	if err := run(context.Background(), []string{"-healthcheck"}, getenv, io.Discard); err == nil {
		t.Error("healthcheck against a draining worker succeeded")
	}
	srv.Close()
	if err := run(context.Background(), []string{"-healthcheck"}, getenv, io.Discard); err == nil {
		t.Error("healthcheck with nothing listening succeeded")
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestRun starts the whole worker, checks the internal listener and the
// FastCGI port, and stops it as SIGTERM would.
func TestRun(t *testing.T) {
	fcgiAddr, internal := freePort(t), freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", fcgiAddr, "-internal-listen", internal, "-id", "t1", "-log-level", "error"}, env(), io.Discard)
	}()
	var resp *http.Response
	var err error
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(20 * time.Millisecond) {
		if resp, err = http.Get("http://" + internal + "/readyz"); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("worker never became ready: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/readyz = %s", resp.Status)
	}
	resp, err = http.Get("http://" + internal + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"sudoku_requests_total", "go_goroutines", "process_resident_memory_bytes"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	c, err := net.Dial("tcp", fcgiAddr)
	if err != nil {
		t.Fatalf("FastCGI port: %v", err)
	}
	c.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after cancel = %v, want nil (exit 0)", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after cancel")
	}
}

func TestRunUnixSocket(t *testing.T) {
	sock := t.TempDir() + "/w.sock"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", sock, "-internal-listen", freePort(t), "-log-level", "error"}, env(), io.Discard)
	}()
	var err error
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(20 * time.Millisecond) {
		var c net.Conn
		if c, err = net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
	}
	if err != nil {
		t.Fatalf("unix socket never accepted: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run = %v", err)
	}
}
