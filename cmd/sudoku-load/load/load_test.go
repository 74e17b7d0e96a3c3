package load

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A server that takes 10 ms shows a p50 near 10 ms. The bounds are wide on
// purpose: the machine is shared and the test must not flake.
func TestLoadLatencyOfSlowServer(t *testing.T) {
	ps, sols := testPuzzles(t)
	url := newFake(t, &fake{sols: sols, before: func(http.ResponseWriter, *http.Request) bool {
		time.Sleep(10 * time.Millisecond)
		return false
	}})
	var ticks atomic.Int64
	res, err := Load(context.Background(), LoadConfig{
		Client: newClient(t, url, 8, 5*time.Second, false), Puzzles: ps, Target: url,
		Conns: 8, Rate: 100, Duration: time.Second,
		Progress: func(Tick) { ticks.Add(1) },
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if res.Sent != 100 || res.OK != 100 || res.ErrorCount() != 0 {
		t.Errorf("Load sent %d, ok %d, errors %v; want 100, 100, none", res.Sent, res.OK, res.Errors)
	}
	if p50 := res.Latency.P50; p50 < 9 || p50 > 50 {
		t.Errorf("p50 = %.3f ms, want about 10 ms (9 to 50; this process's own lag p50 was %.3f ms)", p50, res.ScheduleLag.P50)
	}
	if res.Failed != nil {
		t.Errorf("Failed = %+v with no request failed, want nil", *res.Failed)
	}
	if ticks.Load() < 1 || len(res.Timeline) < 1 {
		t.Errorf("got %d progress ticks and %d timeline entries, want at least one", ticks.Load(), len(res.Timeline))
	}
}

// Coordinated omission: the server stalls for 1 s in the middle of a fixed-
// rate run. Every request due during the stall waits for it, and an open-loop
// tool must charge that wait to those requests, so the stall shows in p99.
// A tool that times requests from when its one connection picks them up
// would record one slow request out of 300 and a p99 of a few milliseconds
// (checked by timing from pick-up instead: this test then fails).
func TestLoadStallShowsInP99(t *testing.T) {
	ps, sols := testPuzzles(t)
	var once sync.Once
	var stallFrom, stallTo time.Time
	url := newFake(t, &fake{sols: sols, before: func(http.ResponseWriter, *http.Request) bool {
		now := time.Now()
		once.Do(func() { stallFrom = now.Add(time.Second); stallTo = stallFrom.Add(time.Second) })
		if now.After(stallFrom) && now.Before(stallTo) {
			time.Sleep(time.Until(stallTo))
		}
		return false
	}})
	res, err := Load(context.Background(), LoadConfig{
		Client: newClient(t, url, 1, 5*time.Second, false), Puzzles: ps, Target: url,
		Conns: 1, Rate: 100, Duration: 3 * time.Second,
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if res.OK != 300 {
		t.Errorf("ok = %d, want 300 (errors %v)", res.OK, res.Errors)
	}
	// About 100 of 300 requests are due during the stall, waiting 0 to 1 s.
	if res.Latency.P99 < 500 || res.Latency.Max < 800 {
		t.Errorf("p99 = %.1f ms, max = %.1f ms; want the 1 s stall in the tail (p99 >= 500, max >= 800)", res.Latency.P99, res.Latency.Max)
	}
	if res.Latency.P50 > 500 {
		t.Errorf("p50 = %.1f ms, want the stall only in the tail (< 500)", res.Latency.P50)
	}
	var backlog int64
	for _, tk := range res.Timeline {
		backlog = max(backlog, tk.Backlog)
	}
	if backlog == 0 {
		t.Errorf("no tick shows a backlog, want requests waiting during the stall: %+v", res.Timeline)
	}
}

// Failed spans the failures to the millisecond: a server that answers 503
// from 400 to 700 ms into a run fails requests over about 300 ms, which
// whole seconds of the timeline would show as one second or two.
func TestLoadFailedSpan(t *testing.T) {
	ps, sols := testPuzzles(t)
	start := time.Now()
	url := newFake(t, &fake{sols: sols, before: func(w http.ResponseWriter, _ *http.Request) bool {
		if d := time.Since(start); d >= 400*time.Millisecond && d < 700*time.Millisecond {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return true
		}
		return false
	}})
	res, err := Load(context.Background(), LoadConfig{
		Client: newClient(t, url, 4, 5*time.Second, false), Puzzles: ps, Target: url,
		Conns: 4, Rate: 200, Duration: time.Second,
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	f := res.Failed
	if f == nil || res.Errors["503_busy"] == 0 {
		t.Fatalf("Failed = %v, errors %v; want a span of 503s", f, res.Errors)
	}
	if span := f.LastMs - f.FirstMs; f.FirstMs < 350 || span < 200 || span > 400 {
		t.Errorf("failures from %.0f to %.0f ms, want from about 400 to about 700", f.FirstMs, f.LastMs)
	}
}

func TestLoadCountsWrongAnswers(t *testing.T) {
	ps, sols := testPuzzles(t)
	for _, text := range []bool{false, true} {
		url := newFake(t, &fake{sols: sols, mangle: func(p, sol string) string {
			if p == ps[2].Text || p == ps[6].Text { // swap two cells: still digits, no longer valid
				b := []byte(sol)
				b[0], b[1] = b[1], b[0]
				return string(b)
			}
			return sol
		}})
		res, err := Load(context.Background(), LoadConfig{
			Client: newClient(t, url, 4, 5*time.Second, text), Puzzles: ps, Target: url,
			Conns: 4, Rate: 200, Duration: 200 * time.Millisecond, // 40 requests: every puzzle twice
		})
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if res.Wrong != 4 || res.Errors["wrong"] != 4 || res.OK != 36 {
			t.Errorf("text=%v: wrong %d (errors %v), ok %d; want 4 wrong and 36 ok", text, res.Wrong, res.Errors, res.OK)
		}
	}
}

func TestLoadTimesOutStuckRequests(t *testing.T) {
	ps, sols := testPuzzles(t)
	block := make(chan struct{})
	url := newFake(t, &fake{sols: sols, before: func(_ http.ResponseWriter, r *http.Request) bool {
		select {
		case <-block:
		case <-r.Context().Done():
		}
		return false
	}})
	defer close(block)
	start := time.Now()
	res, err := Load(context.Background(), LoadConfig{
		Client: newClient(t, url, 2, 300*time.Millisecond, false), Puzzles: ps, Target: url,
		Conns: 2, Rate: 20, Duration: 200 * time.Millisecond, Grace: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if res.Errors["timeout"] != 4 || res.OK != 0 {
		t.Errorf("errors %v, ok %d; want 4 timeouts", res.Errors, res.OK)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Load took %v, want it bounded by duration + grace", d)
	}
}

// Then switches the puzzles at ThenAt by due time: of 100 requests due
// 10 ms apart, the 50 due before 500 ms ask the first set's puzzles and
// the 50 after the second set's, all on the one schedule.
func TestLoadThenSwitchesPuzzles(t *testing.T) {
	ps, sols := testPuzzles(t)
	first, then := ps[:len(ps)/2], ps[len(ps)/2:]
	inThen := map[string]bool{}
	for _, p := range then {
		inThen[p.Text] = true
	}
	var mu sync.Mutex
	asked := map[bool]int{}
	url := newFake(t, &fake{sols: sols, before: func(_ http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		asked[inThen[r.URL.Query().Get("puzzle")]]++
		mu.Unlock()
		return false
	}})
	res, err := Load(context.Background(), LoadConfig{
		Client: newClient(t, url, 4, 5*time.Second, false), Puzzles: first, Then: then, ThenAt: 500 * time.Millisecond,
		Target: url, Conns: 4, Rate: 100, Duration: time.Second,
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if res.OK != 100 || asked[false] != 50 || asked[true] != 50 {
		t.Errorf("ok %d (errors %v); asked %d of the first set and %d of the second, want 100 ok, 50 and 50", res.OK, res.Errors, asked[false], asked[true])
	}
}

// TestLoadRetry: with Retry 1 a request answered 503 goes again after its
// Retry-After and one that got no answer (the connection closed) goes again
// at once; both end answered, and the result says what was resent after
// what. Without Retry they fail.
func TestLoadRetry(t *testing.T) {
	ps, sols := testPuzzles(t)
	for _, retry := range []int{0, 1} {
		var mu sync.Mutex
		seen := map[string]int{}
		// A new connection for each request: Go's client would resend a
		// GET itself on a reused one that the server closed.
		url := newFake(t, &fake{sols: sols, closeEvery: 1, before: func(w http.ResponseWriter, r *http.Request) bool {
			p := r.URL.Query().Get("puzzle")
			mu.Lock()
			seen[p]++
			n := seen[p]
			mu.Unlock()
			switch {
			case n > 1:
				return false
			case p == ps[0].Text:
				w.Header().Set("Retry-After", "2")
				http.Error(w, "busy", http.StatusServiceUnavailable)
			case p == ps[1].Text:
				conn, _, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Errorf("hijack: %v", err)
					return true
				}
				conn.Close()
			default:
				return false
			}
			return true
		}})
		c := newClient(t, url, 4, 5*time.Second, false)
		var mw sync.Mutex
		var waited []time.Duration
		c.sleep = func(_ context.Context, d time.Duration) { mw.Lock(); waited = append(waited, d); mw.Unlock() }
		res, err := Load(context.Background(), LoadConfig{
			Client: c, Puzzles: ps[:10], Target: url, Conns: 4, Rate: 100, Duration: 100 * time.Millisecond, Retry: retry,
		})
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if retry == 0 {
			if res.OK != res.Sent-2 || res.Resent != 0 || res.ResentAfter != nil || res.Errors["503_busy"] != 1 || res.Errors["reset"] != 1 {
				t.Errorf("Retry 0: sent %d ok %d resent %d %v, errors %v; want 2 failed (a 503, a reset), none resent", res.Sent, res.OK, res.Resent, res.ResentAfter, res.Errors)
			}
			continue
		}
		want := map[string]int64{"503_busy": 1, "reset": 1}
		if res.OK != res.Sent || res.Resent != 2 || !maps.Equal(res.ResentAfter, want) || !slices.Equal(waited, []time.Duration{2 * time.Second}) {
			t.Errorf("Retry 1: sent %d ok %d, resent %d after %v, waited %v; want every one answered, resent after %v, waited [2s]",
				res.Sent, res.OK, res.Resent, res.ResentAfter, waited, want)
		}
	}
}
