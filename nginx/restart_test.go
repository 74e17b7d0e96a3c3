package nginx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"sudoku-fcgi/nginx/conf"
	"sudoku-fcgi/nginx/nginxtest"
)

// TestSupervisorRestartsKilledMaster (issue 31, "Nothing lost"): SIGKILL
// of nginx's master under a steady client that opens a new connection for
// every request refuses and fails nothing. The supervisor holds the
// listening socket, so the kernel queues connections while no master
// runs; it starts a new master on the same socket, counts the restart,
// and the dead master's orphaned workers quit. Twice, for the backoff.
func TestSupervisorRestartsKilledMaster(t *testing.T) {
	bin, dir, runDir, port, chPort := supervisorSetup(t)
	back := backend(t, "a")
	metrics := NewMetrics()
	sup := &Supervisor{Config: Config{
		Bin: bin, Prefix: dir, Conf: testNginxWorkers(t, 0, dir, runDir, port, "\n    include "+runDir+"/tls.conf;", ""), RunDir: runDir,
		Listen:  []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))},
		Workers: targets(t, back.String()), WorkerProcesses: 3,
		ResolveInterval: time.Second, BudgetHold: time.Minute,
	}, Metrics: metrics}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := startSupervisor(ctx, t, sup, chPort)
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	nginxtest.WaitUntil(t, 10*time.Second, "nginx answers", func() error {
		nginxtest.Running(t, done, "Run")
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		return err
	})

	// worker_processes comes from the supervisor (-g); nginx.conf has none.
	// The master forks its workers one after another: wait for the third.
	nginxtest.WaitUntil(t, 10*time.Second, "three worker processes", func() error {
		if n := children(t, sup.master.Pid()); n != 3 {
			return fmt.Errorf("nginx master has %d worker processes, want WorkerProcesses=3", n)
		}
		return nil
	})

	// The steady client: one request at a time, a new connection each.
	type tally struct {
		ok, refused, failed int
		firstErr            error
	}
	var (
		mu  sync.Mutex
		sum tally
	)
	loadCtx, stopLoad := context.WithCancel(ctx)
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		for loadCtx.Err() == nil {
			resp, err := c.Get(url)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(b) != "a" {
					err = fmt.Errorf("status %d body %q", resp.StatusCode, b)
				}
			}
			mu.Lock()
			switch {
			case err == nil:
				sum.ok++
			case errors.Is(err, syscall.ECONNREFUSED):
				sum.refused++
			default:
				sum.failed++
			}
			if err != nil && sum.firstErr == nil {
				sum.firstErr = err
			}
			mu.Unlock()
		}
	}()
	okNow := func() int { mu.Lock(); defer mu.Unlock(); return sum.ok }

	for kill := 1; kill <= 2; kill++ {
		time.Sleep(200 * time.Millisecond)
		old := sup.master.Pid()
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		nginxtest.WaitUntil(t, 15*time.Second, "a new master runs", func() error {
			nginxtest.Running(t, done, "Run")
			if n := testutil.ToFloat64(metrics.restarts); n != float64(kill) {
				return fmt.Errorf("sudoku_edge_nginx_restarts_total = %v, want %d", n, kill)
			}
			return nil
		})
		before := okNow()
		nginxtest.WaitUntil(t, 10*time.Second, "requests through the new master", func() error {
			if okNow() < before+20 {
				return errors.New("fewer than 20 answers since the restart")
			}
			return nil
		})
		nginxtest.WaitUntil(t, 15*time.Second, "the dead master's workers exit", func() error {
			if err := syscall.Kill(-old, 0); !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("process group %d still there: %v", old, err)
			}
			return nil
		})
	}
	stopLoad()
	<-loaded
	t.Logf("under two SIGKILLs of the master: %d ok, %d refused, %d failed", sum.ok, sum.refused, sum.failed)
	if sum.refused > 0 || sum.failed > 0 || sum.ok == 0 {
		t.Errorf("requests across master restarts: %d ok, %d refused, %d failed (first error: %v); want none lost",
			sum.ok, sum.refused, sum.failed, sum.firstErr)
	}

	cancel()
	if err := nginxtest.Returned(t, done, 15*time.Second, "Run after cancel"); err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
	if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
		c.Close()
		t.Error("the listening socket is still open after Run returned")
	}
}

// TestSupervisorRefusesWhileNginxCannotStart: once nginx fails to start
// (exits with status 1), the supervisor closes the listening sockets it
// holds, so a client is refused at once instead of waiting in a backlog no
// process accepts from; when nginx can start again, the sockets are open
// again and requests are answered.
func TestSupervisorRefusesWhileNginxCannotStart(t *testing.T) {
	bin, dir, runDir, port, chPort := supervisorSetup(t)
	// The supervisor runs nginx through a wrapper that fails as nginx does
	// on a start-up error while the file broken exists.
	broken := filepath.Join(dir, "broken")
	wrapper := filepath.Join(dir, "nginx-wrapper")
	script := fmt.Sprintf("#!/bin/sh\nif [ -e %q ]; then echo 'nginx: [emerg] broken on purpose' >&2; exit 1; fi\nexec %q \"$@\"\n", broken, bin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	back := backend(t, "a")
	sup := &Supervisor{Config: Config{
		Bin: wrapper, Prefix: dir, Conf: testNginxWorkers(t, 0, dir, runDir, port, "\n    include "+runDir+"/tls.conf;", ""), RunDir: runDir,
		Listen:  []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))},
		Workers: targets(t, back.String()), WorkerProcesses: 1,
		ResolveInterval: time.Second, BudgetHold: time.Minute,
	}, Metrics: NewMetrics()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := startSupervisor(ctx, t, sup, chPort)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	answered := func() error {
		nginxtest.Running(t, done, "Run")
		c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + addr + "/")
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "a" {
			return fmt.Errorf("status %d body %q", resp.StatusCode, b)
		}
		return nil
	}
	nginxtest.WaitUntil(t, 10*time.Second, "nginx answers", answered)

	if err := os.WriteFile(broken, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(sup.master.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	nginxtest.WaitUntil(t, 15*time.Second, "connections refused while nginx cannot start", func() error {
		nginxtest.Running(t, done, "Run")
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return errors.New("connection accepted into a backlog no nginx serves")
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return err
		}
		return nil
	})

	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	nginxtest.WaitUntil(t, 30*time.Second, "nginx answers again once it can start", answered)
	cancel()
	if err := nginxtest.Returned(t, done, 15*time.Second, "Run after cancel"); err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
}

// children counts the processes whose parent is pid.
func children(t *testing.T, pid int) int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	n := 0
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone since the listing
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		if fields := strings.Fields(rest); len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			n++
		}
	}
	return n
}

// TestGracefulStopRefusesNewConnections (a stop refuses instead of
// hanging): once the graceful stop begins, with a request still in flight
// that nginx drains, a new connection is refused at once instead of
// waiting in a backlog no one serves; the request in flight still gets its
// answer and Run returns nil.
func TestGracefulStopRefusesNewConnections(t *testing.T) {
	bin, dir, runDir, port, chPort := supervisorSetup(t)
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	held := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, "held")
	}))
	sup := &Supervisor{Config: Config{
		Bin: bin, Prefix: dir, Conf: testNginxWorkers(t, 0, dir, runDir, port, "\n    include "+runDir+"/tls.conf;", ""), RunDir: runDir,
		Listen:  []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))},
		Workers: targets(t, held), Upstream: conf.Upstream{}, WorkerProcesses: 1,
		ResolveInterval: time.Second, BudgetHold: time.Minute,
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := startSupervisor(ctx, t, sup, chPort)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	nginxtest.WaitUntil(t, 10*time.Second, "nginx accepts", func() error {
		nginxtest.Running(t, done, "Run")
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	})
	type answer struct {
		body string
		err  error
	}
	inFlight := make(chan answer, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			inFlight <- answer{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		inFlight <- answer{string(b), err}
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the backend")
	}

	cancel() // the graceful stop: nginx drains the request in flight
	var lastErr error
	nginxtest.WaitUntil(t, 5*time.Second, "a new connection refused during the drain", func() error {
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err == nil {
			c.Close()
			lastErr = nil
			return errors.New("connection accepted")
		}
		lastErr = err
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil
		}
		return err
	})
	select {
	case a := <-inFlight:
		t.Fatalf("the request in flight ended before its release: %+v (the drain was not under way)", a)
	default:
	}
	if lastErr == nil {
		t.Fatal("no refused connection seen")
	}
	close(release)
	if a := <-inFlight; a.err != nil || a.body != "held" {
		t.Errorf("the request in flight during the stop: %q, %v; want its answer", a.body, a.err)
	}
	if err := nginxtest.Returned(t, done, 15*time.Second, "Run after cancel"); err != nil {
		t.Errorf("Run after a graceful stop = %v, want nil", err)
	}
}

// httptestServer serves h on a loopback port until the test ends and
// returns its host:port.
func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}
