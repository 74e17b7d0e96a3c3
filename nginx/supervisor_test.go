package nginx

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"sudoku-fcgi/nginx/conf"
	"sudoku-fcgi/nginx/nginxtest"
)

// supervisorSetup skips the test where nginx is missing; it returns the
// nginx binary, a fresh prefix directory, the run directory in it, and
// free loopback ports for nginx and for the challenge listener.
func supervisorSetup(t *testing.T) (bin, dir, runDir string, port, chPort int) {
	t.Helper()
	bin = nginxtest.NeedNginx(t)
	dir = t.TempDir()
	return bin, dir, filepath.Join(dir, "run"), nginxtest.FreePort(t), nginxtest.FreePort(t)
}

// startSupervisor runs sup in the background until ctx ends, with the
// challenge listener on 127.0.0.1:chPort, nginx's output discarded and the
// test's logger. It returns what Run returns.
func startSupervisor(ctx context.Context, t *testing.T, sup *Supervisor, chPort int) <-chan error {
	sup.Config.ChallengeListen = fmt.Sprintf("127.0.0.1:%d", chPort)
	sup.Stdout, sup.Stderr, sup.Log = io.Discard, io.Discard, nginxtest.Logger(t)
	serveChallenge(t, sup)
	return nginxtest.Background(func() error { return sup.Run(ctx) })
}

// serveChallenge serves sup's ChallengeHandler on its ChallengeListen until
// the test ends, as sudoku-edge does.
func serveChallenge(t *testing.T, sup *Supervisor) {
	t.Helper()
	srv, err := nginxtest.ServeHTTP(sup.Log, "challenge responder", sup.Config.ChallengeListen, sup.ChallengeHandler())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
}

// supervisorConf is a host variant of the project's nginx.conf layout:
// upstream from runDir/servers.conf, tls.conf at http level, challenges
// proxied to the supervisor's responder, and trusted-clients.conf in a geo
// block whose value comes back in the X-Trusted header.
func supervisorConf(t *testing.T, dir, runDir string, port, challengePort int) string {
	t.Helper()
	return testNginx(t, dir, runDir, port, fmt.Sprintf(`
    include %[1]s/tls.conf;
    geo $trusted {
        default 0;
        include %[1]s/trusted-clients.conf;
    }`, runDir), fmt.Sprintf(`
        add_header X-Trusted $trusted;
        location /.well-known/acme-challenge/ {
            proxy_pass http://127.0.0.1:%d;
            proxy_set_header Host $host;
        }`, challengePort))
}

// readRun reads a file the supervisor writes into runDir.
func readRun(runDir, name string) string {
	b, _ := os.ReadFile(filepath.Join(runDir, name))
	return string(b)
}

// TestSupervisorServesAndStopsGracefully runs the supervisor against the
// host's nginx with two HTTP backends standing in for workers: both get
// traffic, a challenge path answers 404 with TLS off; when one stops, the
// other takes its share until BudgetHold runs out; the metrics follow and
// are served on the metrics listener; and cancelling the context stops
// nginx with status 0.
func TestSupervisorServesAndStopsGracefully(t *testing.T) {
	bin, dir, runDir, port, chPort := supervisorSetup(t)
	metricsPort := nginxtest.FreePort(t)
	var backendAddrs []string
	var backends []*httptest.Server
	for _, id := range []string{"a", "b"} {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, id) }))
		t.Cleanup(s.Close)
		backendAddrs = append(backendAddrs, strings.TrimPrefix(s.URL, "http://"))
		backends = append(backends, s)
	}
	trusted, err := conf.ParsePrefixes([]string{"127.0.0.1", "192.0.2.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	metrics := NewMetrics()
	reg := prometheus.NewRegistry()
	if err := reg.Register(metrics); err != nil {
		t.Fatal(err)
	}
	sup := &Supervisor{Config: Config{
		Bin: bin, Prefix: dir, Conf: supervisorConf(t, dir, runDir, port, chPort), RunDir: runDir,
		Workers: targets(t, backendAddrs...), Upstream: conf.Upstream{MaxConns: 64},
		ResolveInterval: 100 * time.Millisecond, BudgetHold: time.Second, TrustedClients: trusted,
	}, Metrics: metrics}
	// The metrics listener, as sudoku-edge serves it.
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	metricsSrv, err := nginxtest.ServeHTTP(nginxtest.Logger(t), "metrics listener", fmt.Sprintf("127.0.0.1:%d", metricsPort), mux)
	if err != nil {
		t.Fatal(err)
	}
	defer metricsSrv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := startSupervisor(ctx, t, sup, chPort)

	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	seen := map[string]bool{}
	trustedHeader := ""
	deadline := time.Now().Add(10 * time.Second)
	for len(seen) < 2 && time.Now().Before(deadline) {
		nginxtest.Running(t, done, "Run")
		if resp, err := http.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				seen[string(b)] = true
				trustedHeader = resp.Header.Get("X-Trusted")
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !seen["a"] || !seen["b"] {
		t.Fatalf("backends reached through nginx: %v, want a and b", seen)
	}
	if trustedHeader != "1" {
		t.Errorf("X-Trusted = %q for a client on 127.0.0.1 with TrustedClients 127.0.0.1, want 1", trustedHeader)
	}
	servers := readRun(runDir, "servers.conf")
	for _, tgt := range backendAddrs {
		if !strings.Contains(servers, "server "+tgt+" max_fails=0 max_conns=64;") {
			t.Errorf("servers.conf lacks %s:\n%s", tgt, servers)
		}
	}
	// Two workers x max_conns=64, written with servers.conf.
	if adm := readRun(runDir, "admission.conf"); !strings.Contains(adm, "limit_conn sudoku_admission 128;") {
		t.Errorf("admission.conf lacks the limit for two workers x 64:\n%s", adm)
	}
	if w, b := testutil.ToFloat64(metrics.workers), testutil.ToFloat64(metrics.budget); w != 2 || b != 2 {
		t.Errorf("sudoku_edge_workers %v, sudoku_edge_worker_budget %v; want 2 and 2", w, b)
	}
	resp, err := http.Get(url + ".well-known/acme-challenge/token")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("challenge with TLS off: status %d, want 404", resp.StatusCode)
	}

	// b stops (it refuses connections): a takes its share at once, then,
	// once b has been missing for BudgetHold, only its own.
	backends[1].Close()
	stopped := time.Now()
	waitFiles := func(servers, admission string) time.Duration {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			srv, adm := readRun(runDir, "servers.conf"), readRun(runDir, "admission.conf")
			if strings.Contains(srv, servers) && !strings.Contains(srv, "server "+backendAddrs[1]) && strings.Contains(adm, admission) {
				return time.Since(stopped)
			}
		}
		t.Fatalf("want %q without %s and %q; have:\n%s\n%s", servers, backendAddrs[1], admission,
			readRun(runDir, "servers.conf"), readRun(runDir, "admission.conf"))
		return 0
	}
	shared := waitFiles("server "+backendAddrs[0]+" max_fails=0 max_conns=128;", "limit_conn sudoku_admission 128;")
	lowered := waitFiles("server "+backendAddrs[0]+" max_fails=0 max_conns=64;", "limit_conn sudoku_admission 64;")
	if lowered < time.Second || lowered-shared < 500*time.Millisecond {
		t.Errorf("b stopped; a took its share after %v and gave it back after %v, want the share kept for the 1s hold", shared, lowered)
	}
	nginxtest.WaitUntil(t, 5*time.Second, "the metrics listener reports one worker and the lower budget", func() error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range []string{"sudoku_edge_workers 1\n", "sudoku_edge_worker_budget 1\n"} {
			if !strings.Contains(string(b), want) {
				return fmt.Errorf("/metrics lacks %q:\n%s", want, b)
			}
		}
		return nil
	})
	// Two changes reloaded nginx (b gone, then the budget lowered).
	if n := testutil.ToFloat64(metrics.configApplies.WithLabelValues("reloaded")); n < 2 {
		t.Errorf("sudoku_edge_nginx_reloads_total{outcome=reloaded} = %v, want at least 2", n)
	}
	if n := testutil.ToFloat64(metrics.rounds); n < 3 {
		t.Errorf("sudoku_edge_discovery_rounds_total = %v, want at least 3", n)
	}

	cancel()
	if err := nginxtest.Returned(t, done, 10*time.Second, "Run after cancel"); err != nil {
		t.Errorf("Run after cancel = %v, want nil (nginx status 0)", err)
	}
	if _, err := http.Get(url); err == nil {
		t.Error("nginx still answers after Run returned")
	}
}

// TestSupervisorRejectsBadConfig: Run checks its fields before it touches
// the run directory or starts anything.
func TestSupervisorRejectsBadConfig(t *testing.T) {
	runDir := filepath.Join(t.TempDir(), "run")
	for name, sup := range map[string]*Supervisor{
		"no worker":         {Config: Config{ResolveInterval: time.Second, RunDir: runDir}},
		"no interval":       {Config: Config{Workers: targets(t, "sudoku:9000"), RunDir: runDir}},
		"negative interval": {Config: Config{Workers: targets(t, "sudoku:9000"), ResolveInterval: -time.Second, RunDir: runDir}},
	} {
		t.Run(name, func(t *testing.T) {
			if err := sup.Run(context.Background()); err == nil {
				t.Errorf("Run with %+v = nil, want an error", sup)
			}
			if _, err := os.Stat(runDir); err == nil {
				t.Errorf("Run with %+v created %s", sup, runDir)
			}
		})
	}
}

// TestSupervisorUnixWorkers runs the supervisor against the host's nginx
// with HTTP backends on unix sockets found by a unix:<glob> target: both
// get traffic through `server unix:...` lines; one killed (its socket file
// left behind, refusing) leaves the upstream, and a new socket joins it.
func TestSupervisorUnixWorkers(t *testing.T) {
	bin, dir, runDir, port, chPort := supervisorSetup(t)
	sockDir := filepath.Join(dir, "sock")
	if err := os.Mkdir(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	serve := func(id string) (*net.UnixListener, string) {
		path := filepath.Join(sockDir, id+".sock")
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, id) })}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return ln, path
	}
	_, pathA := serve("a")
	lnB, pathB := serve("b")
	sup := &Supervisor{Config: Config{
		Bin: bin, Prefix: dir, Conf: supervisorConf(t, dir, runDir, port, chPort), RunDir: runDir,
		Workers: targets(t, "unix:"+sockDir+"/*.sock"), Upstream: conf.Upstream{MaxConns: 64},
		ResolveInterval: 100 * time.Millisecond, BudgetHold: time.Minute,
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := startSupervisor(ctx, t, sup, chPort)

	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	reached := func(want ...string) {
		t.Helper()
		nginxtest.WaitUntil(t, 10*time.Second, fmt.Sprintf("nginx reaches %v over unix sockets", want), func() error {
			nginxtest.Running(t, done, "Run")
			seen := map[string]bool{}
			for range 40 {
				if resp, err := http.Get(url); err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						return fmt.Errorf("status %d %q", resp.StatusCode, b)
					}
					seen[string(b)] = true
				}
			}
			for _, w := range want {
				if !seen[w] {
					return fmt.Errorf("reached %v, not %s", seen, w)
				}
			}
			if len(seen) != len(want) {
				return fmt.Errorf("reached %v, want only %v", seen, want)
			}
			return nil
		})
	}
	reached("a", "b")
	servers := readRun(runDir, "servers.conf")
	for _, p := range []string{pathA, pathB} {
		if !strings.Contains(servers, "server unix:"+p+" max_fails=0 max_conns=64;") {
			t.Errorf("servers.conf lacks unix:%s:\n%s", p, servers)
		}
	}

	// b is killed: its socket file stays and refuses.
	lnB.SetUnlinkOnClose(false)
	lnB.Close()
	nginxtest.WaitUntil(t, 10*time.Second, "the stale socket leaves servers.conf", func() error {
		if srv := readRun(runDir, "servers.conf"); strings.Contains(srv, pathB) {
			return fmt.Errorf("servers.conf:\n%s", srv)
		}
		return nil
	})
	if _, err := os.Stat(pathB); err != nil {
		t.Fatalf("the killed backend's socket file: %v, want it left behind", err)
	}
	reached("a")
	serve("c")
	reached("a", "c")

	cancel()
	if err := nginxtest.Returned(t, done, 10*time.Second, "Run after cancel"); err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
}

// TestEveryWakes: a wake brings the next call forward, at most once per
// minWakeGap; the ticker still calls on its own.
func TestEveryWakes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wake := make(chan struct{}, 1)
	calls := make(chan time.Time, 10)
	go every(ctx, time.Hour, wake, func() { calls <- time.Now() })
	start := time.Now()
	wake <- struct{}{}
	first := <-calls
	if d := first.Sub(start); d > 10*time.Second {
		t.Errorf("the first wake's call came after %v, want at once, not after the hour's tick", d)
	}
	wake <- struct{}{}
	second := <-calls
	if d := second.Sub(first); d < minWakeGap {
		t.Errorf("a second wake's call came %v after the first, want at least %v", d, minWakeGap)
	}

	ticked := make(chan struct{}, 1)
	go every(ctx, 20*time.Millisecond, nil, func() {
		select {
		case ticked <- struct{}{}:
		default:
		}
	})
	select {
	case <-ticked:
	case <-time.After(5 * time.Second):
		t.Error("no call from the ticker in 5 s with a 20 ms interval")
	}
}
