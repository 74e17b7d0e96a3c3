//go:build e2e

// Package scalee2e checks that sudoku-edge picks up scaling of the worker
// service. Run it through tests/scale/run.sh (make test-scale), which starts
// the compose stack with two workers and passes SUDOKU_E2E_*.
package scalee2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"sudoku-fcgi/cmd/sudoku-load/load"
	"sudoku-fcgi/cmd/sudoku-load/load/loadtest"
	"sudoku-fcgi/nginx/nginxtest"
)

const puzzle = "000000010400000000020000000000050407008000300001090000300400200050100000000806000"

// need returns the environment variable name that tests/scale/run.sh sets.
func need(t *testing.T, name string) string {
	t.Helper()
	return nginxtest.RequireEnv(t, name, "tests/scale/run.sh", "test-scale")
}

// scale runs `<compose> up -d --no-deps --no-recreate --no-build --scale sudoku=n sudoku`.
func scale(t *testing.T, compose string, n int) {
	t.Helper()
	args := strings.Fields(compose)
	args = append(args, "up", "-d", "--no-deps", "--no-recreate", "--no-build", "--scale", "sudoku="+strconv.Itoa(n), "sudoku")
	start := time.Now()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("scaled to %d workers in %v", n, time.Since(start).Round(100*time.Millisecond))
}

// containerStarted is when Docker started the container id.
func containerStarted(id string) (time.Time, error) {
	out, err := exec.Command("docker", "inspect", "-f", "{{.State.StartedAt}}", id).Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("docker inspect %s: %w", id, err)
	}
	return time.Parse(time.RFC3339Nano, strings.TrimSpace(string(out)))
}

// startLoad sends 80 requests/s (one client within nginx's per-client limit
// of 100 r/s) over 8 connections, half of them on a new connection each, and
// counts the answers by worker until stop, which waits for the requests in
// flight.
func startLoad(t *testing.T, addr string) (ws *load.Workers, stop func() load.WorkerTally) {
	t.Helper()
	transport := func(keepAlive bool) http.RoundTripper {
		return &http.Transport{DisableKeepAlives: !keepAlive, DialContext: (&net.Dialer{Timeout: 3 * time.Second}).DialContext}
	}
	cl, err := load.NewClient(load.ClientConfig{URL: "http://" + addr,
		HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: loadtest.Alternate(transport(true), transport(false))}})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := load.ReadPuzzles(strings.NewReader(puzzle))
	if err != nil {
		t.Fatal(err)
	}
	ws = &load.Workers{}
	end := load.Background(context.Background(), load.LoadConfig{Client: cl, Puzzles: ps, Conns: 8, Rate: 80,
		Duration: time.Hour, OnSample: ws.Record})
	return ws, func() load.WorkerTally {
		_, _ = end() // the tally holds every request's fate
		return ws.Tally()
	}
}

func waitWorkers(t *testing.T, l *load.Workers, n int, timeout time.Duration) load.WorkerTally {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := l.Tally()
		if len(r.ByWorker) >= n {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d workers answered within %v, want %d: %v", len(r.ByWorker), timeout, n, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestScale: 2 -> 3 workers, the new one answers within 10 s; 3 -> 2 under
// steady load, no request fails and the removed worker stops answering.
func TestScale(t *testing.T) {
	addr := need(t, "SUDOKU_E2E_HTTP")
	compose := need(t, "SUDOKU_E2E_COMPOSE")
	l, stop := startLoad(t, addr)
	before := waitWorkers(t, l, 2, 20*time.Second)
	if len(before.ByWorker) != 2 {
		stop()
		t.Fatalf("before scaling: %v, want exactly 2 workers", before)
	}

	scale(t, compose, 3)
	scaled := time.Now()
	after := waitWorkers(t, l, 3, 30*time.Second)
	for w, first := range after.FirstSeen {
		if _, old := before.ByWorker[w]; old {
			continue
		}
		// The worker id is its hostname, the container's short id.
		started, err := containerStarted(w)
		if err != nil {
			t.Errorf("new worker %s: %v", w, err)
			continue
		}
		delay := first.Sub(started)
		t.Logf("new worker %s answered %v after its container started (%v after the scale command returned)",
			w, delay.Round(10*time.Millisecond), first.Sub(scaled).Round(10*time.Millisecond))
		if delay > 10*time.Second {
			t.Errorf("new worker %s first answered %v after its container started, want within 10s", w, delay)
		}
	}
	time.Sleep(2 * time.Second)
	res := stop()
	t.Logf("scale up: %v", res)
	if res.Failed > 0 {
		t.Errorf("scale up: %v, errors %q; want no failure", res, res.Errors)
	}

	l, stop = startLoad(t, addr)
	waitWorkers(t, l, 3, 10*time.Second)
	time.Sleep(time.Second)
	scale(t, compose, 2)
	down := time.Now()
	// Several of the edge's resolve rounds (-resolve-interval,
	// contract.ResolveInterval): the set changes, then load goes on.
	time.Sleep(6 * time.Second)
	res = stop()
	t.Logf("scale down: %v", res)
	if res.Failed > 0 || res.OK == 0 {
		t.Errorf("scale down under load: %v, errors %q; want no failure", res, res.Errors)
	}
	var gone []string
	for w, last := range res.LastSeen {
		if last.Before(down) {
			gone = append(gone, w)
		}
	}
	if len(gone) != 1 {
		t.Errorf("workers that stopped answering after scale down: %v, want exactly 1 (last seen: %v)", gone, res.LastSeen)
	}
}
