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
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/fcgi"
	"sudoku-fcgi/fcgi/fcgiserver"
)

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestHelpShowsEnvTwins(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-help"}, env(), &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run -help = %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{
		"$SUDOKU_FCGI_LISTEN", "$SUDOKU_FCGI_INTERNAL_LISTEN", "$SUDOKU_FCGI_ID", "$SUDOKU_FCGI_POOL", "$SUDOKU_FCGI_QUEUE",
		"$SUDOKU_FCGI_QUEUE_TIMEOUT", "$SUDOKU_FCGI_SOLVE_TIMEOUT", "$SUDOKU_FCGI_BATCH_TIMEOUT", "$SUDOKU_FCGI_MAX_CONNS",
		"$SUDOKU_FCGI_DRAIN_TIMEOUT", "$SUDOKU_FCGI_LOG_LEVEL", "-healthcheck", "-version", `(default "127.0.0.1:9000")`,
		"-solve-timeout duration", "(default 1s)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-help lacks %q", want)
		}
	}
	// The summary names the listener pprof is on: its own, not the
	// internal one (TestRun checks the internal one has none).
	if summary, _, _ := strings.Cut(out.String(), "Flags"); !strings.Contains(summary, "pprof profiles only on an address of their\nown when -pprof-listen") {
		t.Errorf("-help's summary does not put pprof on -pprof-listen:\n%s", summary)
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-version"}, env(), &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run -version = %v, want flag.ErrHelp", err)
	}
	if !strings.HasPrefix(out.String(), "sudoku-fcgi, version ") {
		t.Errorf("-version printed %q, want it to start with \"sudoku-fcgi, version \"", out.String())
	}
}

func TestParseFlags(t *testing.T) {
	t.Run("env then flag", func(t *testing.T) {
		c, err := parseConfig([]string{"-pool", "3"}, env("SUDOKU_FCGI_POOL", "7", "SUDOKU_FCGI_QUEUE", "5", "SUDOKU_FCGI_QUEUE_TIMEOUT", "20ms", "SUDOKU_FCGI_ID", "w9"), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if c.svc.PoolSize != 3 || c.svc.QueueSize != 5 || c.svc.QueueTimeout != 20*time.Millisecond || c.svc.WorkerID != "w9" {
			t.Errorf("config = %+v, want pool 3 (flag), queue 5, 20ms, id w9 (env)", c)
		}
	})
	t.Run("socket directory", func(t *testing.T) {
		for _, tt := range []struct {
			args []string
			env  func(string) (string, bool)
			want string
		}{
			{[]string{"-listen", "/run/sudoku-fcgi/", "-id", "3f2a9c1b"}, env(), "/run/sudoku-fcgi/3f2a9c1b.sock"},
			{nil, env("SUDOKU_FCGI_LISTEN", "/run/s/", "SUDOKU_FCGI_ID", "w-1.a_b"), "/run/s/w-1.a_b.sock"},
			{[]string{"-listen", "/run/s/w.sock", "-id", "x"}, env(), "/run/s/w.sock"},
			{[]string{"-listen", ":9000", "-id", "x"}, env(), ":9000"},
		} {
			c, err := parseConfig(tt.args, tt.env, io.Discard)
			if err != nil || c.listen != tt.want {
				t.Errorf("parseConfig(%q) listen = %q, %v; want %q", tt.args, c.listen, err, tt.want)
			}
		}
	})
	t.Run("pprof", func(t *testing.T) {
		for _, tt := range []struct {
			args []string
			env  func(string) (string, bool)
			want string
		}{
			{nil, env(), ""},
			{[]string{"-pprof-listen", ":6060"}, env(), "127.0.0.1:6060"},
			{nil, env("SUDOKU_FCGI_PPROF_LISTEN", ":6061"), "127.0.0.1:6061"},
			{[]string{"-pprof-listen", "0.0.0.0:6060"}, env(), "0.0.0.0:6060"},
			// An empty twin turns pprof off where a flag turned it on.
			{nil, env("SUDOKU_FCGI_PPROF_LISTEN", ""), ""},
		} {
			c, err := parseConfig(tt.args, tt.env, io.Discard)
			if err != nil || c.pprofListen != tt.want {
				t.Errorf("parseConfig(%q) pprof listen = %q, %v; want %q", tt.args, c.pprofListen, err, tt.want)
			}
		}
	})
	// Issue 30: the lab's switches are gone.
	t.Run("no lab switches", func(t *testing.T) {
		for _, f := range []string{"-bench-http", "-maxprocs"} {
			if _, err := parseConfig([]string{f, "1"}, env(), io.Discard); err == nil {
				t.Errorf("parseConfig(%s 1) succeeded, want an unknown flag", f)
			}
		}
	})
	t.Run("no queue", func(t *testing.T) {
		c, err := parseConfig([]string{"-queue", "0"}, env(), io.Discard)
		if err != nil || c.svc.QueueSize != 0 {
			t.Errorf("parseConfig(-queue 0) = queue %d, %v; want QueueSize 0 (none)", c.svc.QueueSize, err)
		}
	})
	// With no flags and no environment, the configuration is the
	// packages' defaults: the flags show them, they do not repeat them.
	t.Run("defaults", func(t *testing.T) {
		c, err := parseConfig(nil, env(), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		want := defaultConfig()
		if err := want.check(); err != nil {
			t.Fatal(err)
		}
		c.svc.OpenConns, want.svc.OpenConns = nil, nil
		if !reflect.DeepEqual(c.svc, want.svc) || !reflect.DeepEqual(c.serve, want.serve) {
			t.Errorf("parseConfig() = %+v / %+v, want the defaults %+v / %+v", c.svc, c.serve, want.svc, want.serve)
		}
		if d := fcgi.DefaultConfig(); c.svc.QueueSize != d.QueueSize || c.svc.SolveTimeout != d.SolveTimeout {
			t.Errorf("parseConfig() queue %d, solve timeout %v; want fcgi.DefaultConfig's %d, %v", c.svc.QueueSize, c.svc.SolveTimeout, d.QueueSize, d.SolveTimeout)
		}
		if d := fcgiserver.DefaultOptions(); c.serve.MaxParamsBytes != d.MaxParamsBytes || c.serve.MaxConns != d.MaxConns {
			t.Errorf("parseConfig() params cap %d, max conns %d; want fcgiserver.DefaultOptions' %d, %d", c.serve.MaxParamsBytes, c.serve.MaxConns, d.MaxParamsBytes, d.MaxConns)
		}
		// The stack's measured values are the binary's own (README.md).
		if c.serve.Linger != 2*time.Second || c.rt.MemoryLimit != 48<<20 || c.rt.MemoryLimit.String() != "48MiB" {
			t.Errorf("parseConfig() drain linger %v, memory limit %v; want 2s and 48MiB", c.serve.Linger, c.rt.MemoryLimit.String())
		}
	})
	t.Run("memory limit", func(t *testing.T) {
		for in, want := range map[string]cli.ByteSize{"0": 0, "1GiB": 1 << 30, "512KiB": 512 << 10, "1000": 1000, "64B": 64, "3TiB": 3 << 40} {
			c, err := parseConfig(nil, env("SUDOKU_FCGI_MEMORY_LIMIT", in), io.Discard)
			if err != nil || c.rt.MemoryLimit != want {
				t.Errorf("$SUDOKU_FCGI_MEMORY_LIMIT=%s: %d, %v; want %d", in, c.rt.MemoryLimit, err, want)
			}
		}
		for _, in := range []string{"48M", "48 MiB", "-1MiB", "MiB", "1.5GiB", "99999999TiB"} {
			if _, err := parseConfig([]string{"-memory-limit", in}, env(), io.Discard); err == nil || !strings.Contains(err.Error(), "want a size") {
				t.Errorf("-memory-limit %q: %v, want an error naming the form", in, err)
			}
		}
	})
	for _, tt := range []struct {
		name string
		args []string
		env  func(string) (string, bool)
		want string
	}{
		{"bad env int", nil, env("SUDOKU_FCGI_POOL", "x"), "SUDOKU_FCGI_POOL"},
		{"empty env int", nil, env("SUDOKU_FCGI_POOL", ""), `invalid value "" for $SUDOKU_FCGI_POOL`},
		{"empty env id", nil, env("SUDOKU_FCGI_ID", ""), "-id is empty"},
		{"empty env listen", nil, env("SUDOKU_FCGI_LISTEN", ""), "-listen is empty"},
		{"empty env internal listen", nil, env("SUDOKU_FCGI_INTERNAL_LISTEN", ""), "-internal-listen is empty"},
		{"empty env log level", nil, env("SUDOKU_FCGI_LOG_LEVEL", ""), "-log-level is empty"},
		{"bad env duration", nil, env("SUDOKU_FCGI_SOLVE_TIMEOUT", "5"), "SUDOKU_FCGI_SOLVE_TIMEOUT"},
		{"negative", []string{"-queue", "-1"}, env(), ">= 0"},
		{"zero timeout", []string{"-solve-timeout", "0s"}, env(), "> 0"},
		{"zero batch timeout", nil, env("SUDOKU_FCGI_BATCH_TIMEOUT", "0s"), "-batch-timeout"},
		{"bad id", []string{"-id", "a b"}, env(), "printable"},
		{"id unfit for a socket name", []string{"-listen", "/run/s/", "-id", "a/b"}, env(), "no file name"},
		{"hidden socket name", []string{"-listen", "/run/s/", "-id", ".x"}, env(), "no file name"},
		{"id unfit for nginx", []string{"-listen", "/run/s/", "-id", "a;b"}, env(), "no file name"},
		{"socket path unfit for the edge", []string{"-listen", "/run/s/a+b.sock"}, env(), "no socket file name"},
		{"hidden socket path", []string{"-listen", "/run/s/.w.sock"}, env(), "no socket file name"},
		{"bad log level", []string{"-log-level", "loud"}, env(), "-log-level"},
		{"negative log flush", []string{"-log-flush", "-1s"}, env(), "-log-flush"},
		{"negative gc percent", nil, env("SUDOKU_FCGI_GC_PERCENT", "-1"), "-gc-percent"},
		{"extra args", []string{"x"}, env(), "unexpected"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseConfig(tt.args, tt.env, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseConfig(%q) = %v, want an error mentioning %q", tt.args, err, tt.want)
			}
			if !errors.As(err, new(*cli.UsageError)) {
				t.Errorf("parseConfig(%q) = %T, want a *cli.UsageError (exit 2)", tt.args, err)
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
	lookupEnv := env("SUDOKU_FCGI_INTERNAL_LISTEN", ":"+port)
	if err := run(context.Background(), []string{"-healthcheck"}, lookupEnv, io.Discard); err != nil {
		t.Errorf("healthcheck against a ready worker = %v", err)
	}
	ready = false
	if err := run(context.Background(), []string{"-healthcheck"}, lookupEnv, io.Discard); err == nil {
		t.Error("healthcheck against a draining worker succeeded")
	}
	srv.Close()
	if err := run(context.Background(), []string{"-healthcheck"}, lookupEnv, io.Discard); err == nil {
		t.Error("healthcheck with nothing listening succeeded")
	}
}

// start runs the worker with args until the test ends or stop is called,
// which returns run's error. Nothing drops it from an upstream, so it
// stops without the drain linger.
func start(t *testing.T, args ...string) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append(args, "-log-level", "error", "-drain-linger", "0s"), env(), io.Discard)
	}()
	stop = func() error {
		cancel()
		select {
		case err := <-done:
			done <- err
			return err
		case <-time.After(15 * time.Second):
			t.Fatal("run did not return after cancel")
			return nil
		}
	}
	t.Cleanup(func() { stop() })
	return stop
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
	stop := start(t, "-listen", fcgiAddr, "-internal-listen", internal, "-id", "t1")
	resp := getWhenUp(t, "http://"+internal+"/readyz", "worker")
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/readyz = %s", resp.Status)
	}
	resp, err := http.Get("http://" + internal + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"sudoku_requests_total", "go_goroutines", "process_resident_memory_bytes", "sudoku_build_info{"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if resp, err := http.Get("http://" + internal + "/debug/pprof/"); err != nil || resp.StatusCode != 404 {
		t.Errorf("internal /debug/pprof/ = %v, %v; want 404 (profiles have their own listener)", resp, err)
	} else {
		resp.Body.Close()
	}
	c, err := net.Dial("tcp", fcgiAddr)
	if err != nil {
		t.Fatalf("FastCGI port: %v", err)
	}
	c.Close()
	if err := stop(); err != nil {
		t.Fatalf("run after cancel = %v, want nil (exit 0)", err)
	}
}

// getWhenUp GETs url until the listener behind it answers, for up to 5 s,
// and fails the test naming what when it never does. The caller closes the
// body.
func getWhenUp(t *testing.T, url, what string) *http.Response {
	t.Helper()
	var err error
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(20 * time.Millisecond) {
		var resp *http.Response
		if resp, err = http.Get(url); err == nil {
			return resp
		}
	}
	t.Fatalf("%s never answered: %v", what, err)
	return nil
}

// waitForSocket waits up to 5 s for the worker to accept on sock.
func waitForSocket(t *testing.T, sock string) {
	t.Helper()
	var err error
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(20 * time.Millisecond) {
		var c net.Conn
		if c, err = net.Dial("unix", sock); err == nil {
			c.Close()
			return
		}
	}
	t.Fatalf("unix socket %s never accepted: %v", sock, err)
}

// -pprof-listen serves the profiles on a listener of its own.
func TestRunPprof(t *testing.T) {
	pp := freePort(t)
	start(t, "-listen", freePort(t), "-internal-listen", freePort(t), "-pprof-listen", pp)
	resp := getWhenUp(t, "http://"+pp+"/debug/pprof/", "pprof listener")
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("-pprof-listen /debug/pprof/ = %s, want 200", resp.Status)
	}
}

func TestRunUnixSocket(t *testing.T) {
	sock := t.TempDir() + "/w.sock"
	stop := start(t, "-listen", sock, "-internal-listen", freePort(t))
	waitForSocket(t, sock)
	if err := stop(); err != nil {
		t.Fatalf("run = %v", err)
	}
}

// A -listen directory gets a socket named after -id, and the worker
// removes it when it stops (sudoku-edge then lists it no more).
func TestRunUnixSocketDirectory(t *testing.T) {
	dir := t.TempDir()
	sock := dir + "/w7.sock"
	stop := start(t, "-listen", dir+"/", "-id", "w7", "-internal-listen", freePort(t))
	waitForSocket(t, sock)
	if err := stop(); err != nil {
		t.Fatalf("run = %v", err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the stop: Lstat(%s) = %v, want the socket removed", sock, err)
	}
}

// listen replaces a stale socket file (a killed worker's) but never the
// socket of a live worker that shares the directory.
func TestListenUnixSocketInUse(t *testing.T) {
	sock := t.TempDir() + "/w.sock"
	ln, err := listen(sock, -1)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o660 {
		t.Errorf("socket mode: %v, %v; want 0660 (owner and group only)", fi, err)
	}
	if second, err := listen(sock, -1); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("listen on a live worker's socket = %v, %v; want an error saying it is in use", second, err)
		if second != nil {
			second.Close()
		}
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // stale now: the file stays and refuses
	again, err := listen(sock, -1)
	if err != nil {
		t.Fatalf("listen on a stale socket = %v, want it replaced", err)
	}
	again.Close()
}

// Issue 31: the socket is for its owner and one group (nginx's), not
// 0666 for every user of the host or the volume.
func TestListenUnixSocketGroup(t *testing.T) {
	gid := os.Getgid()
	if os.Getuid() == 0 {
		gid = 4242 // root may give it any group
	} else if gs, _ := os.Getgroups(); len(gs) > 0 {
		gid = gs[len(gs)-1]
	}
	sock := t.TempDir() + "/w.sock"
	c, err := parseConfig([]string{"-listen", sock, "-socket-group", strconv.Itoa(gid)}, env(), io.Discard)
	if err != nil || c.socketGID != gid {
		t.Fatalf("parseConfig(-socket-group %d) = gid %d, %v", gid, c.socketGID, err)
	}
	ln, err := listen(c.listen, c.socketGID)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Skip("no Stat_t on this system")
	}
	if int(st.Gid) != gid || fi.Mode().Perm() != 0o660 {
		t.Errorf("socket group %d, mode %v; want group %d, 0660", st.Gid, fi.Mode().Perm(), gid)
	}
	if c, err := parseConfig([]string{"-listen", ":9000", "-socket-group", "1"}, env(), io.Discard); err != nil || c.socketGID != -1 {
		t.Errorf("-socket-group with a TCP -listen = gid %d, %v; want it ignored", c.socketGID, err)
	}
	if _, err := parseConfig([]string{"-listen", sock, "-socket-group", "no-such-group-x"}, env(), io.Discard); err == nil {
		t.Error("-socket-group naming no group accepted, want an error")
	}
}
