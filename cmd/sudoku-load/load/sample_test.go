package load

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// With the server holding every request, a run with MaxInFlight 3 sends 3
// of them and leaves the rest unsent; OnSample sees all 20, unsent as
// timeouts, and the result counts the unsent as timeouts too.
func TestLoadMaxInFlight(t *testing.T) {
	ps, sols := testPuzzles(t)
	url := newFake(t, &fake{sols: sols, before: func(w http.ResponseWriter, _ *http.Request) bool {
		time.Sleep(300 * time.Millisecond) // longer than the run: every request is held
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	}})
	var mu sync.Mutex
	var sent, unsent, busy int
	res, err := Load(t.Context(), LoadConfig{Client: newClient(t, url, 8, 5*time.Second, false), Puzzles: ps,
		Conns: 8, Rate: 100, Duration: 200 * time.Millisecond, MaxInFlight: 3,
		OnSample: func(s Sample) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case !s.Sent && s.Kind == KindTimeout:
				unsent++
			case s.Sent && s.Kind == KindBusy && s.Status == http.StatusServiceUnavailable:
				sent++
				busy++
			case s.Sent:
				sent++
			}
		}})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if sent != 3 || unsent != 17 || busy != 3 {
		t.Errorf("OnSample saw %d sent (%d 503), %d unsent; want 3 (3), 17", sent, busy, unsent)
	}
	if res.Sent != 3 || res.Errors["503_busy"] != 3 || res.Errors["timeout"] != 17 || res.ErrorCount() != 20 {
		t.Errorf("result sent %d, errors %v; want 3 sent, 3 503s and 17 timeouts", res.Sent, res.Errors)
	}
}

// Bursts: 5 requests are due at once every 100 ms, and each sample's due
// time says so; the samples carry the worker header and the User-Agent
// reaches the server.
func TestLoadBurstsAndSamples(t *testing.T) {
	ps, sols := testPuzzles(t)
	var agents sync.Map
	url := newFake(t, &fake{sols: sols, before: func(w http.ResponseWriter, r *http.Request) bool {
		agents.Store(r.UserAgent(), true)
		w.Header().Set("X-Sudoku-Worker", "w1")
		return false
	}})
	cl, err := NewClient(ClientConfig{URL: url, Conns: 8, UserAgent: "sudoku-reliability/bursts"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var mu sync.Mutex
	dues := map[time.Duration]int{}
	workers := map[string]int{}
	res, err := Load(t.Context(), LoadConfig{Client: cl, Puzzles: ps, Conns: 8, Rate: 50, Burst: 5, Duration: 500 * time.Millisecond,
		OnSample: func(s Sample) {
			mu.Lock()
			defer mu.Unlock()
			dues[s.Due]++
			workers[s.Worker]++
		}})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if res.OK != 25 || len(dues) != 5 {
		t.Errorf("ok %d over %d due times (%v), want 25 over 5", res.OK, len(dues), dues)
	}
	for d, n := range dues {
		if n != 5 || d%(100*time.Millisecond) != 0 {
			t.Errorf("%d requests due at %v, want 5 at a multiple of 100ms", n, d)
		}
	}
	if workers["w1"] != 25 {
		t.Errorf("samples by worker %v, want 25 from w1", workers)
	}
	if _, ok := agents.Load("sudoku-reliability/bursts"); !ok {
		t.Errorf("the server saw no request with the configured User-Agent")
	}
}

// Background runs until stopped; the requests sent by then finish, and
// Workers counts every answer and failure by worker.
func TestBackgroundWithWorkers(t *testing.T) {
	ps, sols := testPuzzles(t)
	var n atomic.Int64
	url := newFake(t, &fake{sols: sols, before: func(w http.ResponseWriter, r *http.Request) bool {
		if n.Add(1)%4 == 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return true
		}
		w.Header().Set("X-Sudoku-Worker", "w1")
		return false
	}})
	var ws Workers
	stop := Background(t.Context(), LoadConfig{Client: newClient(t, url, 2, 5*time.Second, false), Puzzles: ps,
		Conns: 2, Rate: 200, Duration: time.Minute, OnSample: ws.Record})
	time.Sleep(300 * time.Millisecond)
	res, err := stop()
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	tl := ws.Tally()
	if tl.OK == 0 || tl.Failed == 0 || tl.ByWorker["w1"] != tl.OK || len(tl.Errors) == 0 || !strings.Contains(tl.Errors[0], "503_busy") {
		t.Errorf("tally against a server failing every 4th request = %v, errors %q; want both counts, w1 and the 503s", tl, tl.Errors)
	}
	if got := float64(tl.Failed) / float64(tl.OK+tl.Failed); got < 0.15 || got > 0.35 {
		t.Errorf("failure share %.2f, want about 0.25", got)
	}
	if int64(tl.OK) != res.OK || res.DurationS > 30 {
		t.Errorf("result ok %d over %.1fs, tally ok %d; want the same count over the time until stop", res.OK, res.DurationS, tl.OK)
	}
	if tl.FirstSeen["w1"].After(tl.LastSeen["w1"]) || tl.LastSeen["w1"].IsZero() {
		t.Errorf("w1 first seen %v, last seen %v", tl.FirstSeen["w1"], tl.LastSeen["w1"])
	}
}

func TestPercentileOf(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{99, 99 * time.Millisecond}, {50, 50 * time.Millisecond}, {100, 100 * time.Millisecond}} {
		// 3 significant digits: within 0.1%, never above the value.
		got := PercentileOf(d, tc.q)
		if got > tc.want || got < tc.want-tc.want/1000 {
			t.Errorf("PercentileOf(1..100ms, %v) = %v, want %v (to 0.1%%, not above)", tc.q, got, tc.want)
		}
	}
	if got := PercentileOf(nil, 99); got != 0 {
		t.Errorf("PercentileOf(nil, 99) = %v, want 0", got)
	}
	// A single figure never reads higher than recorded: a threshold at
	// exactly that figure holds.
	if got := PercentileOf([]time.Duration{50 * time.Millisecond}, 99); got > 50*time.Millisecond || got < 50*time.Millisecond-50*time.Microsecond {
		t.Errorf("PercentileOf([50ms], 99) = %v, want 50ms to 0.1%%, not above", got)
	}
}
