package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	stdfcgi "net/http/fcgi"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/nginx"
	"sudoku-fcgi/nginx/conf"
	"sudoku-fcgi/nginx/logs"
	"sudoku-fcgi/nginx/nginxtest"
)

// env is the environment a test runs the command with.
type env map[string]string

func (e env) get(name string) (string, bool) { v, ok := e[name]; return v, ok }

// mustParse is parseConfig of args and e, which must succeed.
func mustParse(t *testing.T, args []string, e env) *config {
	t.Helper()
	c, err := parseConfig(args, e.get, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseConfig(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		c := mustParse(t, nil, env{})
		s := &c.sup
		if s.Config.WorkerProcesses != runtime.GOMAXPROCS(0) {
			t.Errorf("default -worker-processes = %d, want GOMAXPROCS %d (the CPUs the container may use)", s.Config.WorkerProcesses, runtime.GOMAXPROCS(0))
		}
		if (targetsFlag{&s.Config.Workers}).String() != "sudoku:9000" || s.Config.ResolveInterval != time.Second || s.Config.Upstream != (conf.Upstream{MaxConns: 256, MaxFails: 1, FailTimeout: time.Second}) || s.Config.BudgetHold != time.Minute || s.Config.RunDir != "/run/sudoku-edge" ||
			s.Config.Bin != "nginx" || s.Config.Conf != "/etc/nginx/nginx.conf" || s.Config.ChallengeListen != "127.0.0.1:8081" || c.metricsListen != ":9145" ||
			s.Config.ProxyProtocol || s.Config.HTTPListen != "8080" {
			t.Errorf("parseConfig(nil) = %+v, want the documented defaults", s)
		}
	})
	t.Run("an empty twin turns metrics off", func(t *testing.T) {
		if c := mustParse(t, nil, env{"SUDOKU_EDGE_METRICS_LISTEN": ""}); c.metricsListen != "" {
			t.Errorf("SUDOKU_EDGE_METRICS_LISTEN= gives -metrics-listen %q, want empty (off)", c.metricsListen)
		}
	})
	t.Run("unix socket targets", func(t *testing.T) {
		c, err := parseConfig(nil, env{"SUDOKU_EDGE_WORKERS": "unix:/run/sudoku-fcgi/*.sock,other:9000"}.get, io.Discard)
		if err != nil || (targetsFlag{&c.sup.Config.Workers}).String() != "unix:/run/sudoku-fcgi/*.sock,other:9000" {
			t.Errorf("parseConfig(SUDOKU_EDGE_WORKERS=unix:...) = %+v, %v", c, err)
		}
	})
	t.Run("lists take white space and empty items", func(t *testing.T) {
		c := mustParse(t, []string{"-workers", " w:1, w:2 ,", "-trusted-clients", " 10.0.0.0/8 , "}, env{})
		if got := (targetsFlag{&c.sup.Config.Workers}).String(); got != "w:1,w:2" {
			t.Errorf("-workers ' w:1, w:2 ,' gives %q, want w:1,w:2", got)
		}
		if want := []netip.AddrPort{netip.MustParseAddrPort("0.0.0.0:8080"), netip.MustParseAddrPort("0.0.0.0:8082")}; !slices.Equal(c.sup.Config.Listen, want) {
			t.Errorf("-http-listen 8080 and -status-listen 8082 hold %v, want %v", c.sup.Config.Listen, want)
		}
		if want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}; !slices.Equal(c.sup.Config.TrustedClients, want) {
			t.Errorf("-trusted-clients ' 10.0.0.0/8 , ' gives %v, want %v", c.sup.Config.TrustedClients, want)
		}
	})
	t.Run("held sockets follow the listen flags", func(t *testing.T) {
		c := mustParse(t, []string{"-http-listen", "127.0.0.1:18080", "-status-listen", "127.0.0.1:18082", "-tls-domains", "a.example.com", "-tls-listen", "[::]:18443"}, env{})
		want := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:18080"), netip.MustParseAddrPort("127.0.0.1:18082"), netip.MustParseAddrPort("[::]:18443")}
		if !slices.Equal(c.sup.Config.Listen, want) {
			t.Errorf("held sockets %v, want %v: -http-listen, -status-listen and, with TLS, -tls-listen", c.sup.Config.Listen, want)
		}
		if c := mustParse(t, []string{"-hold-sockets=false"}, env{}); len(c.sup.Config.Listen) != 0 {
			t.Errorf("-hold-sockets=false holds %v, want none", c.sup.Config.Listen)
		}
	})
	t.Run("env twins, flags win", func(t *testing.T) {
		c := mustParse(t, []string{"-workers", "w:1"}, env{
			"SUDOKU_EDGE_WORKERS":              "ignored:2",
			"SUDOKU_EDGE_RESOLVE_INTERVAL":     "500ms",
			"SUDOKU_EDGE_MAX_CONNS_PER_WORKER": "64",
			"SUDOKU_EDGE_MAX_FAILS":            "2",
			"SUDOKU_EDGE_BUDGET_HOLD":          "5m",
			"SUDOKU_EDGE_METRICS_LISTEN":       "127.0.0.1:19145",
			"SUDOKU_EDGE_WORKER_PROCESSES":     "3",
			"SUDOKU_EDGE_KEEPALIVE":            "90",
			"SUDOKU_EDGE_PROXY_PROTOCOL":       "true",
			"SUDOKU_EDGE_REAL_IP_FROM":         "10.0.0.0/8",
			"SUDOKU_EDGE_HTTP_LISTEN":          "127.0.0.1:18080",
		})
		s := &c.sup
		if (targetsFlag{&s.Config.Workers}).String() != "w:1" || s.Config.ResolveInterval != 500*time.Millisecond || s.Config.Upstream != (conf.Upstream{MaxConns: 64, MaxFails: 2, FailTimeout: time.Second}) || s.Config.BudgetHold != 5*time.Minute ||
			c.metricsListen != "127.0.0.1:19145" || s.Config.WorkerProcesses != 3 || s.Config.Limits != (conf.ProcessLimits{Connections: 8192, Keepalive: 90}) ||
			!s.Config.ProxyProtocol || len(s.Config.RealIPFrom) != 1 || s.Config.HTTPListen != "127.0.0.1:18080" {
			t.Errorf("parseConfig = %+v", s)
		}
	})
	t.Run("access log socket", func(t *testing.T) {
		if c := mustParse(t, nil, env{}); c.accessLog != (logs.AccessLog{Path: "/run/sudoku-edge/access-log.sock"}) {
			t.Errorf("default access log = %+v, want access-log.sock in the run directory, sampled", c.accessLog)
		}
		c := mustParse(t, []string{"-access-log-all", "-run-dir", "/r"}, env{"SUDOKU_EDGE_ACCESS_LOG_SOCKET": "/log.sock"})
		if c.accessLog != (logs.AccessLog{Path: "/log.sock", All: true}) {
			t.Errorf("access log = %+v, want /log.sock, every answer", c.accessLog)
		}
		if c := mustParse(t, []string{"-access-log-socket", "x.sock", "-run-dir", "/r"}, env{}); c.accessLog.Path != "/r/x.sock" {
			t.Errorf("relative -access-log-socket = %q, want it in -run-dir", c.accessLog.Path)
		}
	})
	bad := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-resolve-interval", "0s"}, nil, "not positive"},
		{[]string{"-budget-hold", "0s"}, nil, "not positive"},
		{[]string{"-fail-timeout", "1500ms"}, nil, "whole seconds"},
		{nil, map[string]string{"SUDOKU_EDGE_RESOLVE_INTERVAL": "soon"}, "SUDOKU_EDGE_RESOLVE_INTERVAL"},
		{[]string{"-max-conns-per-worker", "-1"}, nil, "-max-conns-per-worker"},
		{[]string{"-max-fails", "-1"}, nil, "-max-fails"},
		{[]string{"-client-rate", "0"}, nil, "-client-rate 0"},
		{[]string{"-client-burst", "-1"}, nil, "-client-burst -1"},
		{nil, map[string]string{"SUDOKU_EDGE_BATCH_BODIES": "0"}, "-batch-bodies 0"},
		{[]string{"-max-body", "0"}, nil, "-max-body 0"},
		{[]string{"-max-conns-per-worker", "many"}, nil, "invalid value"},
		{[]string{"-workers", "sudoku"}, nil, "missing port"},
		{[]string{"-workers", "unix:run/*.sock"}, nil, "absolute"},
		{[]string{"-workers", " , "}, nil, "no worker target given"},
		{[]string{"-log-level", "loud"}, nil, "log-level"},
		{[]string{"-worker-processes", "-1"}, nil, "worker-processes"},
		{[]string{"-keepalive", "0"}, nil, "-keepalive"},
		{[]string{"-worker-connections", "-5"}, nil, "-worker-connections"},
		{[]string{"-http-listen", "localhost:8080"}, nil, "-http-listen"},
		{[]string{"-status-listen", "localhost:8082"}, nil, "-status-listen"},
		{[]string{"-metrics-listen", "9145"}, nil, "metrics-listen"},
		{[]string{"-trusted-clients", "10.0.0.0/33"}, nil, "trusted-clients"},
		{[]string{"-real-ip-from", "10.0.0.0/33"}, nil, "real-ip-from"},
		{[]string{"-proxy-protocol"}, nil, "-proxy-protocol needs -real-ip-from"},
		{[]string{"extra"}, nil, "unexpected argument"},
		// An empty twin is the empty value, which these settings refuse.
		{nil, map[string]string{"SUDOKU_EDGE_RUN_DIR": ""}, "-run-dir is empty ($SUDOKU_EDGE_RUN_DIR)"},
		{nil, map[string]string{"SUDOKU_EDGE_LOG_LEVEL": ""}, "-log-level is empty"},
		{nil, map[string]string{"SUDOKU_EDGE_WORKERS": ""}, "SUDOKU_EDGE_WORKERS"},
		{nil, map[string]string{"SUDOKU_EDGE_BUDGET_HOLD": ""}, "SUDOKU_EDGE_BUDGET_HOLD"},
	}
	for _, tt := range bad {
		t.Run(strings.Join(tt.args, " ")+fmt.Sprint(tt.env), func(t *testing.T) {
			_, err := parseConfig(tt.args, env(tt.env).get, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseConfig(%q, %v) error = %v, want one mentioning %q", tt.args, tt.env, err, tt.want)
			}
			if !errors.As(err, new(*cli.UsageError)) {
				t.Errorf("parseConfig(%q, %v) error %T, want a *cli.UsageError (exit 2)", tt.args, tt.env, err)
			}
		})
	}
}

// TestHelp checks -help line by line where it used to be wrong: a
// backquoted word in a usage text names the value, so it must be the
// value's name; and a flag without a default shows none.
func TestHelp(t *testing.T) {
	var out strings.Builder
	err := run(context.Background(), []string{"-help"}, env{}.get, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run(-help) = %v, want flag.ErrHelp (exit 0)", err)
	}
	help := out.String()
	for _, want := range []string{
		"Usage: sudoku-edge [flags]",
		"-workers targets\n", "unix:<glob>", "$SUDOKU_EDGE_WORKERS", "(default sudoku:9000)", "-resolve-interval duration\n", "-budget-hold duration\n", "(default 1s)",
		"-max-conns-per-worker count\n", "(default 256) ($SUDOKU_EDGE_MAX_CONNS_PER_WORKER)\n", "-max-fails tries\n", "($SUDOKU_EDGE_MAX_FAILS)\n",
		"-metrics-listen address\n", `(default ":9145") ($SUDOKU_EDGE_METRICS_LISTEN)`,
		"-tls-domains names\n", "-tls-hsts-max-age seconds\n", "(default 63072000) ($SUDOKU_EDGE_TLS_HSTS_MAX_AGE)",
		"-tls-redirect\n", "-version\n",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("help output lacks %q:\n%s", want, help)
		}
	}
	for _, bad := range []string{`(default "")`, "server ip:port", "(default false)", "(default 0)"} {
		if strings.Contains(help, bad) {
			t.Errorf("help output has %q:\n%s", bad, help)
		}
	}
}

func TestVersion(t *testing.T) {
	var out strings.Builder
	err := run(context.Background(), []string{"-version"}, env{}.get, &out)
	if !errors.Is(err, flag.ErrHelp) || !strings.HasPrefix(out.String(), "sudoku-edge, version ") {
		t.Errorf("run(-version) = %v, printed %q; want flag.ErrHelp and the version", err, out.String())
	}
}

// TestRunServesMetricsAndStops runs the whole command with the project's
// nginx config and a FastCGI worker: nginx reaches the worker, the metrics
// listener serves sudoku_build_info and the edge's counters (nginx's
// public server does not), and cancelling the context (SIGTERM in main)
// stops nginx with status 0.
func TestRunServesMetricsAndStops(t *testing.T) {
	bin := nginxtest.NeedNginx(t)
	dir := t.TempDir()
	// nginx's worker processes (another user when run as root) reach the log socket.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	httpPort, statusPort, acmePort, metricsPort := nginxtest.FreePort(t), nginxtest.FreePort(t), nginxtest.FreePort(t), nginxtest.FreePort(t)
	conf := renderHostConf(t, dir, httpPort, statusPort, acmePort)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	edge := edgeRun{bin: bin, dir: dir, conf: conf, worker: fcgiWorker(t, "w1"), http: httpPort, status: statusPort, acme: acmePort}
	done := edge.start(ctx, env{
		"SUDOKU_EDGE_METRICS_LISTEN": fmt.Sprintf("127.0.0.1:%d", metricsPort),
		"SUDOKU_EDGE_LOG_LEVEL":      "warn",
	}, "-resolve-interval", "100ms")
	get := func(url string) (int, string, error) {
		nginxtest.Running(t, done, "run")
		resp, err := http.Get(url)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	public := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	nginxtest.WaitUntil(t, 10*time.Second, "nginx reaches the worker", func() error {
		if code, body, err := get(public + "/sudoku/stats"); err != nil || code != 200 || !strings.Contains(body, `"worker":"w1"`) {
			return fmt.Errorf("GET /sudoku/stats = %d %q, %v", code, body, err)
		}
		return nil
	})
	code, body, err := get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	if err != nil || code != 200 {
		t.Fatalf("GET /metrics on -metrics-listen = %d, %v", code, err)
	}
	for _, want := range []string{"sudoku_build_info{", "sudoku_edge_workers 1\n", "sudoku_edge_discovery_rounds_total ", `sudoku_edge_nginx_reloads_total{outcome="rejected"} 0`, "sudoku_edge_nginx_restarts_total 0\n", "sudoku_edge_certificate_failures_total 0\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if _, body, _ := get(public + "/metrics"); strings.Contains(body, "sudoku_build_info") {
		t.Errorf("nginx's public server exposes the edge's metrics:\n%s", body)
	}
	// nginx's own answers are counted by default (its 404 for /metrics
	// above, a 405), each exactly.
	if code, _, err := get(public + "/sudoku/stats?x"); err != nil || code != 200 {
		t.Fatalf("GET /sudoku/stats = %d, %v", code, err)
	}
	if resp, err := http.Post(public+"/sudoku/stats", "text/plain", nil); err != nil || resp.StatusCode != 405 {
		t.Fatalf("POST /sudoku/stats = %v, %v; want 405", resp, err)
	} else {
		resp.Body.Close()
	}
	nginxtest.WaitUntil(t, 5*time.Second, "the edge counts nginx's answers", func() error {
		_, body, err := get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
		for _, want := range []string{`sudoku_edge_nginx_responses_total{code="404",source="nginx"} 1`, `sudoku_edge_nginx_responses_total{code="405",source="nginx"} 1`} {
			if err == nil && !strings.Contains(body, want) {
				err = fmt.Errorf("/metrics lacks %q:\n%s", want, body)
			}
		}
		return err
	})
	// The worker's 200s come in the sample only (one request in 16), each
	// line counting 16: a count that is not a multiple of 16 was logged
	// for every answer.
	_, body, _ = get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	for _, line := range strings.Split(body, "\n") {
		v, ok := strings.CutPrefix(line, `sudoku_edge_nginx_responses_total{code="200",source="worker"} `)
		if n, err := strconv.Atoi(v); ok && (err != nil || n%16 != 0) {
			t.Errorf("the worker's 200s counted %q, want a multiple of 16 (sampled)", v)
		}
	}

	cancel()
	if err := nginxtest.Returned(t, done, 10*time.Second, "run after cancel"); err != nil {
		t.Errorf("run after cancel = %v, want nil (nginx status 0)", err)
	}
	if _, err := http.Get(public + "/sudoku/stats"); err == nil {
		t.Error("nginx still answers after run returned")
	}
}

// TestRunExitsWithNginxStatus: nginx that cannot start (bad config) makes
// run return its exit status.
func TestRunExitsWithNginxStatus(t *testing.T) {
	bin := nginxtest.NeedNginx(t)
	dir := t.TempDir()
	conf := nginxtest.WriteConf(t, dir, 1, 16, "\n    no_such_directive;\n")
	err := run(context.Background(), []string{
		"-nginx", bin, "-nginx-prefix", dir, "-nginx-conf", conf, "-run-dir", filepath.Join(dir, "run"),
		"-hold-sockets=false", "-workers", "127.0.0.1:1", "-challenge-listen", fmt.Sprintf("127.0.0.1:%d", nginxtest.FreePort(t)), "-metrics-listen", "",
	}, env{}.get, io.Discard)
	ee, ok := errors.AsType[*nginx.ExitError](err)
	if !ok || ee.ExitCode() != 1 {
		t.Errorf("run with a broken nginx.conf: %v, want nginx's exit status 1 as an *nginx.ExitError", err)
	}
}

// TestRenderOnly: -render-only writes every file nginx.conf includes, with
// the same code as a run, and -render-conf nginx.conf and the files beside
// it, naming that run directory and the flags' addresses; both return
// without starting nginx (the -nginx binary does not exist).
func TestRenderOnly(t *testing.T) {
	dir, conf := filepath.Join(t.TempDir(), "run"), t.TempDir()
	err := run(context.Background(), []string{
		"-render-only", dir, "-nginx", "/nonexistent/nginx", "-workers", "127.0.0.1:9000, 127.0.0.1:9002",
		"-real-ip-from", "10.0.0.0/8", "-log-level", "warn",
		"-worker-processes", "4", "-worker-connections", "10000",
		"-render-conf", conf, "-www-root", "/src/www", "-nginx-temp-dir", "/src/tmp",
		"-http-listen", "127.0.0.1:28080", "-status-listen", "127.0.0.1:28082", "-challenge-listen", "127.0.0.1:28081",
		"-read-timeout", "2500ms",
	}, env{"SUDOKU_EDGE_BATCH_READ_TIMEOUT": "1m"}.get, io.Discard)
	if err != nil {
		t.Fatalf("run(-render-only) = %v", err)
	}
	for name, want := range map[string]string{
		"servers.conf":         "server 127.0.0.1:9000 max_fails=1 fail_timeout=1s max_conns=256;\nserver 127.0.0.1:9002 max_fails=1 fail_timeout=1s max_conns=256;\n",
		"real-ip.conf":         "set_real_ip_from 10.0.0.0/8;\n",
		"listen.conf":          "\nlisten 127.0.0.1:28080 default_server;\n",
		"tls.conf":             "map $https $sudoku_hsts {",
		"admission.conf":       "\nlimit_conn sudoku_admission 512;\n",
		"trusted-clients.conf": "# Written by sudoku-edge",
		// The totals shared among the 4 worker processes.
		"events.conf":    "\nworker_connections 2500;\n",
		"keepalive.conf": "\nkeepalive 128;\n",
	} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("-render-only wrote %s = %q, %v; want it to contain %q", name, b, err, want)
		}
	}
	for name, wants := range map[string][]string{
		"nginx.conf": {"include " + dir + "/servers.conf;"},
		"sudoku-locations.conf": {"include " + dir + "/admission.conf;",
			"\n    fastcgi_read_timeout 2500ms;\n}", "\n    fastcgi_read_timeout 60s;\n}"},
		"sudoku-www.conf":     {"root /src/www;"},
		"sudoku-fastcgi.conf": {"fastcgi_pass sudoku_workers;"},
	} {
		b, err := os.ReadFile(filepath.Join(conf, name))
		for _, want := range wants {
			if err != nil || !strings.Contains(string(b), want) {
				t.Errorf("-render-conf wrote %s = %v; want it to contain %q", name, err, want)
			}
		}
	}
	b, _ := os.ReadFile(filepath.Join(conf, "nginx.conf"))
	for _, want := range []string{"include " + dir + "/listen.conf;", "listen 127.0.0.1:28082;", "proxy_pass http://127.0.0.1:28081;", "client_body_temp_path /src/tmp/body;"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("-render-conf's nginx.conf has no %q", want)
		}
	}
}

// holdingWorker serves FastCGI like a worker whose pool is full: it holds
// each /sudoku request until the test ends (or nginx gives up on it) and
// reports on held that it has one; /sudoku/stats it answers at once.
func holdingWorker(t *testing.T) (addr string, held <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release, h := make(chan struct{}), make(chan struct{}, 16)
	go stdfcgi.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/sudoku" {
			h <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		io.WriteString(w, `{"worker":"held"}`)
	}))
	t.Cleanup(func() { close(release); ln.Close() })
	return ln.Addr().String(), h
}

// TestBareEdgeCapsTheWorkers runs sudoku-edge with none of the stack's
// settings, only where its files and ports are: it renders the shipped
// cap, max_fails=0 max_conns=256 per worker and a limit_conn of 1 x 256;
// with -max-conns-per-worker 1 and a worker that holds the one request
// it has, the next /sudoku gets nginx's 503 at once.
func TestBareEdgeCapsTheWorkers(t *testing.T) {
	bin := nginxtest.NeedNginx(t)
	for _, tc := range []struct {
		name  string
		extra []string
		limit int
	}{
		{"defaults", nil, 256},
		{"cap of one", []string{"-max-conns-per-worker", "1"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, d := range []string{filepath.Dir(dir), dir} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			httpPort, statusPort, acmePort := nginxtest.FreePort(t), nginxtest.FreePort(t), nginxtest.FreePort(t)
			worker, held := holdingWorker(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			edge := edgeRun{bin: bin, dir: dir, conf: renderHostConf(t, dir, httpPort, statusPort, acmePort), worker: worker, http: httpPort, status: statusPort, acme: acmePort}
			done := edge.start(ctx, env{"SUDOKU_EDGE_METRICS_LISTEN": "", "SUDOKU_EDGE_LOG_LEVEL": "warn"}, tc.extra...)
			public := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
			nginxtest.WaitUntil(t, 10*time.Second, "nginx reaches the worker", func() error {
				nginxtest.Running(t, done, "run")
				return nginxtest.Answers200(public + "/sudoku/stats")
			})
			for name, want := range map[string]string{
				"servers.conf":   fmt.Sprintf("\nserver %s max_fails=1 fail_timeout=1s max_conns=%d;\n", worker, tc.limit),
				"admission.conf": fmt.Sprintf("\nlimit_conn sudoku_admission %d;\n", tc.limit),
				// The per-client limits a bare edge renders are the shipped ones.
				"client-limits.conf": "\nlimit_req_zone $sudoku_client zone=sudoku_req:10m rate=100r/s;\n",
				"route-limits.conf":  "\nlimit_req zone=sudoku_req burst=200 nodelay;\nlimit_conn sudoku_client_conn 64;\n",
			} {
				if b, err := os.ReadFile(filepath.Join(dir, "run", name)); err != nil || !strings.Contains(string(b), want) {
					t.Errorf("%s = %q, %v; want it to contain %q", name, b, err, want)
				}
			}
			if tc.limit != 1 {
				return
			}
			first := make(chan error, 1)
			go func() {
				resp, err := http.Get(public + "/sudoku?puzzle=1")
				if err == nil {
					resp.Body.Close()
				}
				first <- err
			}()
			select {
			case <-held:
			case err := <-first:
				t.Fatalf("the first /sudoku returned (%v) before the worker held it", err)
			case <-time.After(10 * time.Second):
				t.Fatal("the worker never got the first /sudoku")
			}
			resp, err := http.Get(public + "/sudoku?puzzle=2")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if ra := resp.Header.Get("Retry-After"); resp.StatusCode != 503 || !strings.Contains(string(body), "service full") || ra < "1" || ra > "3" || len(ra) != 1 {
				t.Errorf("/sudoku past the cap = %d %q (Retry-After %q), want nginx's 503 service full, Retry-After 1-3", resp.StatusCode, body, ra)
			}
			select {
			case <-held:
				t.Error("the worker got the request past the cap")
			default:
			}
			cancel()
			if err := nginxtest.Returned(t, done, 10*time.Second, "run after cancel"); err != nil {
				t.Errorf("run after cancel = %v", err)
			}
		})
	}
}
