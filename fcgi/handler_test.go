package fcgi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"sudoku-fcgi/solver"
)

const (
	solution = "693784512487512936125963874932651487568247391741398625319475268856129743274836159"
	// easy is solution with column 5 and a diagonal blanked: unique, fast.
	easy = "093704512407502936120903874932001487568207391741300625319405068856109703274806150"
	// open has many solutions.
	open = "000000000000000000000000000000000000000000000000000000000000000000000000000000000"
	// dead: cell 9 of row 1 has no candidate (9 sits below it).
	dead = "123456780000000009000000000000000000000000000000000000000000000000000000000000000"
)

// cfg returns the default configuration for worker test-1, changed by set.
func cfg(set ...func(*Config)) Config {
	c := DefaultConfig()
	c.WorkerID = "test-1"
	for _, f := range set {
		f(&c)
	}
	return c
}

func newTestService(t testing.TB, cfg Config) *Service {
	t.Helper()
	if cfg.WorkerID == "" {
		cfg.WorkerID = "test-1"
	}
	return New(cfg, zerolog.Nop())
}

func serve(s *Service, method, target string, body io.Reader, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, body)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

func decodeError(t *testing.T, w *httptest.ResponseRecorder) map[string]string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatalf("error body %q is not JSON: %v", w.Body, err)
	}
	if m["error"] == "" {
		t.Fatalf("error body %q has no error", w.Body)
	}
	return m
}

func TestHandlerGET(t *testing.T) {
	s := newTestService(t, cfg())
	tests := []struct {
		name, target string
		hdr          []string
		status       int
		body         string // exact body, or "" to skip
		errHas       string // substring of the JSON error
	}{
		{"solved", "/sudoku?puzzle=" + easy + "&id=a1", nil, 200,
			`{"id":"a1","puzzle":"` + easy + `","solution":"` + solution + `"}` + "\n", ""},
		{"dots", "/sudoku?puzzle=" + strings.ReplaceAll(easy, "0", "."), nil, 200,
			`{"puzzle":"` + easy + `","solution":"` + solution + `"}` + "\n", ""},
		{"unique", "/sudoku?puzzle=" + easy + "&unique=1", nil, 200,
			`{"puzzle":"` + easy + `","solution":"` + solution + `","unique":true}` + "\n", ""},
		{"not unique", "/sudoku?unique=1&puzzle=" + open, nil, 200, "", ""},
		{"text format", "/sudoku?puzzle=" + easy + "&id=x&format=text", nil, 200, "x:" + solution + "\n", ""},
		{"text accept", "/sudoku?puzzle=" + easy, []string{"Accept", "text/plain"}, 200, solution + "\n", ""},
		{"text unique", "/sudoku?puzzle=" + easy + "&id=u&unique=1&format=text", nil, 200, "u:" + solution + " unique\n", ""},
		{"text accept unique", "/sudoku?puzzle=" + easy + "&unique=1", []string{"Accept", "text/plain"}, 200, solution + " unique\n", ""},
		{"format any case", "/sudoku?puzzle=" + easy + "&format=TEXT", nil, 200, solution + "\n", ""},
		{"json any case", "/sudoku?puzzle=" + easy + "&format=Json", []string{"Accept", "text/plain"}, 200,
			`{"puzzle":"` + easy + `","solution":"` + solution + `"}` + "\n", ""},
		{"unique any case", "/sudoku?puzzle=" + easy + "&unique=YES", nil, 200,
			`{"puzzle":"` + easy + `","solution":"` + solution + `","unique":true}` + "\n", ""},
		{"unique false any case", "/sudoku?puzzle=" + easy + "&unique=False", nil, 200,
			`{"puzzle":"` + easy + `","solution":"` + solution + `"}` + "\n", ""},
		{"escaped id", "/sudoku?puzzle=" + easy + "&id=%22q%22", nil, 200,
			`{"id":"\"q\"","puzzle":"` + easy + `","solution":"` + solution + `"}` + "\n", ""},
		{"missing puzzle", "/sudoku", nil, 400, "", "missing query parameter puzzle"},
		{"short", "/sudoku?puzzle=123", nil, 400, "", "got 3 cells, want 81"},
		{"bad char", "/sudoku?puzzle=x" + easy[1:], nil, 400, "", "unexpected 'x'"},
		{"conflict", "/sudoku?puzzle=11" + easy[2:], nil, 400, "", "row 1 has two 1s"},
		{"bad escape", "/sudoku?puzzle=%zz", nil, 400, "", "invalid %-escape"},
		{"bad escape elsewhere", "/sudoku?puzzle=" + easy + "&x=%zz", nil, 400, "", "invalid %-escape"},
		{"semicolon", "/sudoku?puzzle=" + easy + ";x=1", nil, 400, "", "separate parameters with '&'"},
		{"bad unique", "/sudoku?puzzle=" + easy + "&unique=maybe", nil, 400, "", "unique must be"},
		{"bad format", "/sudoku?puzzle=" + easy + "&format=xml", nil, 400, "", "format must be"},
		{"long id", "/sudoku?puzzle=" + easy + "&id=" + strings.Repeat("i", 65), nil, 400, "", "longer than 64"},
		{"control id", "/sudoku?puzzle=" + easy + "&id=a%0Ab", nil, 400, "", "control characters"},
		{"no solution", "/sudoku?puzzle=" + dead + "&id=d", nil, 422, "", "no solution"},
		{"not found", "/nope", nil, 404, "", "no such path"},
		{"not found prefix", "/sudoku/x", nil, 404, "", "no such path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := serve(s, "GET", tt.target, nil, tt.hdr...)
			if w.Code != tt.status {
				t.Fatalf("GET %s = %d %q, want %d", tt.target, w.Code, w.Body, tt.status)
			}
			if got := w.Header().Get("X-Sudoku-Worker"); got != "test-1" {
				t.Errorf("X-Sudoku-Worker = %q, want test-1", got)
			}
			if got, want := w.Header().Get("Content-Length"), len(w.Body.Bytes()); got != itoa(want) {
				t.Errorf("Content-Length = %q, body is %d bytes", got, want)
			}
			if tt.body != "" && w.Body.String() != tt.body {
				t.Errorf("GET %s body = %q, want %q", tt.target, w.Body, tt.body)
			}
			if tt.errHas != "" {
				if ct := w.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q, want application/json", ct)
				}
				if m := decodeError(t, w); !strings.Contains(m["error"], tt.errHas) {
					t.Errorf("error = %q, want it to mention %q", m["error"], tt.errHas)
				}
			}
		})
	}
	t.Run("not unique says so in text", func(t *testing.T) {
		w := serve(s, "GET", "/sudoku?unique=1&format=text&puzzle="+open, nil)
		if w.Code != 200 || !strings.HasSuffix(w.Body.String(), " not-unique\n") || len(w.Body.String()) != 81+len(" not-unique\n") {
			t.Fatalf("GET unique=1 format=text of an open grid = %d %q, want <solution> not-unique", w.Code, w.Body)
		}
	})
	t.Run("not unique says so", func(t *testing.T) {
		w := serve(s, "GET", "/sudoku?unique=1&puzzle="+open, nil)
		var m map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil || m["unique"] != false {
			t.Fatalf("body %q: unique = %v (err %v), want false", w.Body, m["unique"], err)
		}
	})
	t.Run("error echoes id", func(t *testing.T) {
		w := serve(s, "GET", "/sudoku?puzzle=1&id=z9", nil)
		if m := decodeError(t, w); m["id"] != "z9" {
			t.Errorf("id = %q, want z9", m["id"])
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestHandlerMethods(t *testing.T) {
	s := newTestService(t, cfg())
	for _, tt := range []struct{ method, path, allow string }{
		{"PUT", "/sudoku", "GET, HEAD, POST"},
		{"DELETE", "/sudoku", "GET, HEAD, POST"},
		{"POST", "/sudoku/stats", "GET, HEAD"},
	} {
		w := serve(s, tt.method, tt.path, nil)
		if w.Code != 405 || w.Header().Get("Allow") != tt.allow {
			t.Errorf("%s %s = %d Allow %q, want 405 Allow %q", tt.method, tt.path, w.Code, w.Header().Get("Allow"), tt.allow)
		}
		decodeError(t, w)
	}
}

// HEAD answers exactly as GET would, header and Content-Length included,
// without the body.
func TestHandlerHead(t *testing.T) {
	s := newTestService(t, cfg())
	for _, target := range []string{
		"/sudoku?puzzle=" + easy + "&id=h",
		"/sudoku?puzzle=" + easy + "&format=text",
		"/sudoku?puzzle=1",
		"/sudoku?puzzle=" + dead,
		"/nope",
	} {
		get, head := serve(s, "GET", target, nil), serve(s, "HEAD", target, nil)
		if head.Code != get.Code || head.Body.Len() != 0 {
			t.Errorf("HEAD %s = %d with %d body bytes, want %d (as GET) and none", target, head.Code, head.Body.Len(), get.Code)
		}
		for _, h := range []string{"Content-Length", "Content-Type", "X-Sudoku-Worker", "Cache-Control"} {
			if head.Header().Get(h) != get.Header().Get(h) {
				t.Errorf("HEAD %s: %s = %q, GET has %q", target, h, head.Header().Get(h), get.Header().Get(h))
			}
		}
	}
	if w := serve(s, "HEAD", "/sudoku/stats", nil); w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Length") == "" {
		t.Errorf("HEAD /sudoku/stats = %d, %d body bytes, Content-Length %q; want 200, none, a length", w.Code, w.Body.Len(), w.Header().Get("Content-Length"))
	}
}

func TestHandlerStats(t *testing.T) {
	s := newTestService(t, cfg(func(c *Config) { c.PoolSize = 3 }))
	serve(s, "GET", "/sudoku?puzzle="+easy, nil)
	serve(s, "GET", "/sudoku?puzzle=1", nil)
	serve(s, "GET", "/sudoku?puzzle="+dead, nil)
	w := serve(s, "GET", "/sudoku/stats", nil)
	if w.Code != 200 {
		t.Fatalf("stats = %d %q", w.Code, w.Body)
	}
	var st statsJSON
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("stats body %q: %v", w.Body, err)
	}
	if st.Worker != "test-1" || st.PoolSize != 3 || st.QueueCapacity != 1024 {
		t.Errorf("stats worker/pool/queue = %q/%d/%d, want test-1/3/1024", st.Worker, st.PoolSize, st.QueueCapacity)
	}
	for k, want := range map[string]uint64{"solved": 1, "bad_request": 1, "no_solution": 1, "too_busy": 0} {
		if got := st.Totals[k]; got != want {
			t.Errorf("totals[%s] = %d, want %d", k, got, want)
		}
	}
	for _, k := range []string{"1s", "10s", "60s"} {
		if _, ok := st.RequestsPerSecond[k]; !ok {
			t.Errorf("requests_per_second has no %q", k)
		}
	}
	for _, k := range []string{"p50", "p90", "p99", "p99.9"} {
		if _, ok := st.LatencySeconds[k]; !ok {
			t.Errorf("latency_seconds has no %q", k)
		}
	}
	if st.Memory.RSSBytes == 0 || st.Memory.HeapInUseBytes == 0 || st.Goroutines == 0 {
		t.Errorf("memory/goroutines not filled: %+v, %d", st.Memory, st.Goroutines)
	}
	if st.InFlight != 1 { // the stats request itself
		t.Errorf("in_flight = %d, want 1", st.InFlight)
	}
}

// GET /sudoku/stats is built at most once per statsMaxAge however many
// ask at once: the refreshes are counted against injected request times,
// not measured.
func TestStatsSnapshotRefreshesOncePerSecond(t *testing.T) {
	s := newTestService(t, cfg())
	t0 := time.Unix(5000, 0)
	const callers = 200
	bodies := make([][]byte, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			// Requests spread over the first 995 ms, in any order.
			b, err := s.statsSnapshot(t0.Add(time.Duration(i%200) * 5 * time.Millisecond))
			if err != nil {
				t.Errorf("statsSnapshot = %v", err)
			}
			bodies[i] = b
		})
	}
	wg.Wait()
	if s.sc.refreshes != 1 {
		t.Fatalf("%d concurrent stats calls within a second built %d bodies, want 1", callers, s.sc.refreshes)
	}
	for i, b := range bodies {
		if !bytes.Equal(b, bodies[0]) {
			t.Fatalf("caller %d got %q, caller 0 %q: want the one snapshot", i, b, bodies[0])
		}
	}
	// A second after the snapshot (built for one of the requests, at
	// most 995 ms after t0) the next caller builds a new one, which sees
	// what happened meanwhile.
	serve(s, "GET", "/sudoku?puzzle="+easy, nil)
	b, _ := s.statsSnapshot(t0.Add(995*time.Millisecond + statsMaxAge))
	var st statsJSON
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("stats body %q: %v", b, err)
	}
	if s.sc.refreshes != 2 || st.Totals["solved"] != 1 {
		t.Errorf("after a second: %d bodies built, totals.solved %d; want 2 and 1", s.sc.refreshes, st.Totals["solved"])
	}
	if st.Memory.HeapInUseBytes == 0 || st.Memory.SysBytes < st.Memory.HeapInUseBytes {
		t.Errorf("memory from runtime/metrics = %+v, want heap in use > 0 and sys >= heap in use", st.Memory)
	}
}

func TestStatsWindows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	st := newStats(t0.Add(-time.Hour), newMetrics(newPool(1, 0, 0), func() bool { return false }).requestSeconds)
	for i := 99; i >= 0; i-- {
		// 10 per second over the 10 seconds before t0, in the order they end ...
		st.record(t0.Add(-time.Duration(1+i/10)*time.Second), time.Duration(i+1)*time.Millisecond)
	}
	// ... and some in the current, incomplete second, which is not counted.
	st.record(t0, time.Hour)
	snap := st.snapshot(t0.Add(time.Millisecond))
	if snap.RPS1 != 10 || snap.RPS10 != 10 || snap.RPS60 != 100.0/60 {
		t.Errorf("rps = %v/%v/%v, want 10/10/%v", snap.RPS1, snap.RPS10, snap.RPS60, 100.0/60)
	}
	// latencies 1..100 ms: p50 ~ 50ms, p99 ~ 99ms, interpolated within
	// their buckets as histogram_quantile does.
	for _, c := range []struct {
		got, want time.Duration
	}{{snap.P50, 50 * time.Millisecond}, {snap.P90, 90 * time.Millisecond}, {snap.P99, 99 * time.Millisecond}} {
		if c.got < c.want || float64(c.got) > float64(c.want)*1.15 {
			t.Errorf("quantile = %v, want %v (+15%%)", c.got, c.want)
		}
	}
	// A minute later everything has aged out.
	if snap := st.snapshot(t0.Add(2 * time.Minute)); snap.RPS60 != 0 || snap.P50 != 0 {
		t.Errorf("after 2 minutes rps60 = %v p50 = %v, want 0", snap.RPS60, snap.P50)
	}
}

// A stats request that started in a second before the newest snapshot
// (another request ended in the next second meanwhile) still sees the
// seconds before its own: nothing ended in between.
func TestStatsSnapshotBehindNewestSecond(t *testing.T) {
	t0 := time.Unix(1000, 0)
	st := newStats(t0.Add(-time.Hour), newMetrics(newPool(1, 0, 0), func() bool { return false }).requestSeconds)
	for range 10 {
		st.record(t0.Add(-time.Second), time.Millisecond)
	}
	st.record(t0.Add(time.Second), time.Millisecond)
	snap := st.snapshot(t0.Add(time.Millisecond))
	if snap.RPS1 != 10 || snap.LatencySamples != 10 {
		t.Errorf("rps1 = %v, samples = %d; want 10 and 10", snap.RPS1, snap.LatencySamples)
	}
}

// quantile interpolates within the bucket the rank falls in, starts the
// first bucket at 0, answers the highest bound above it, and 0 for none.
func TestQuantile(t *testing.T) {
	cumulative := func(counts map[int]uint64) []uint64 {
		c := make([]uint64, len(latencyBuckets))
		var n uint64
		for i := range c {
			n += counts[i]
			c[i] = n
		}
		return c
	}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	lo, hi := latencyBuckets[3], latencyBuckets[4]
	for _, c := range []struct {
		name   string
		counts map[int]uint64
		n      uint64
		q      float64
		want   time.Duration
	}{
		{"none", nil, 0, 0.5, 0},
		{"middle of a bucket", map[int]uint64{4: 10}, 10, 0.5, sec(lo + (hi-lo)/2)},
		{"top of a bucket", map[int]uint64{4: 10}, 10, 1, sec(hi)},
		{"next bucket", map[int]uint64{3: 5, 4: 5}, 10, 0.9, sec(lo + (hi-lo)*4/5)},
		{"first bucket from 0", map[int]uint64{0: 4}, 4, 0.25, sec(latencyBuckets[0] / 4)},
		{"above the highest bound", map[int]uint64{0: 1}, 10, 0.99, sec(latencyBuckets[len(latencyBuckets)-1])},
	} {
		if got := quantile(cumulative(c.counts), c.n, c.q); got != c.want {
			t.Errorf("%s: quantile = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestHandlerDraining(t *testing.T) {
	s := newTestService(t, cfg())
	s.SetDraining(true)
	w := serve(s, "GET", "/sudoku?puzzle="+easy, nil)
	if w.Code != 503 || w.Header().Get("Retry-After") == "" {
		t.Fatalf("while draining: %d Retry-After %q, want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	decodeError(t, w)
}

func TestHandlerPanic(t *testing.T) {
	s := newTestService(t, cfg())
	s.solve = func(context.Context, solver.Grid, int) (solver.Result, error) { panic("boom") }
	w := serve(s, "GET", "/sudoku?puzzle="+easy, nil)
	if w.Code != 500 {
		t.Fatalf("panicking solve: %d %q, want 500", w.Code, w.Body)
	}
	if m := decodeError(t, w); strings.Contains(m["error"], "boom") {
		t.Errorf("500 body leaks the panic: %q", m["error"])
	}
	// The slot was released and the service goes on.
	s.solve = solver.SolveContext
	for range s.pool.Size() + 1 {
		if w := serve(s, "GET", "/sudoku?puzzle="+easy, nil); w.Code != 200 {
			t.Fatalf("after a panic: %d %q, want 200", w.Code, w.Body)
		}
	}
	// A panic inside a batch line answers that line only.
	s.solve = func(context.Context, solver.Grid, int) (solver.Result, error) { panic("boom") }
	w = serve(s, "POST", "/sudoku", strings.NewReader("a:"+easy+"\n"))
	if w.Code != 200 || w.Body.String() != "error: internal error\n" {
		t.Errorf("batch with panicking solve: %d %q", w.Code, w.Body)
	}
}

// An error nobody expects from the solver is a 500 through classify, not a
// panic: the panic counter stays at zero, and a batch line says so alone.
func TestHandlerUnexpectedError(t *testing.T) {
	s := newTestService(t, cfg())
	s.solve = func(context.Context, solver.Grid, int) (solver.Result, error) {
		return solver.Result{}, errors.New("disk on fire")
	}
	w := serve(s, "GET", "/sudoku?puzzle="+easy+"&id=e", nil)
	if w.Code != 500 {
		t.Fatalf("GET with a failing solve = %d %q, want 500", w.Code, w.Body)
	}
	if m := decodeError(t, w); m["error"] != "internal error" || m["id"] != "e" {
		t.Errorf("500 body = %v, want the generic error and the id", m)
	}
	w = serve(s, "POST", "/sudoku", strings.NewReader("a:"+easy+"\n"))
	if w.Code != 200 || w.Body.String() != "a:error: internal error\n" {
		t.Errorf("batch with a failing solve = %d %q, want a:error: internal error", w.Code, w.Body)
	}
	if n := testutil.ToFloat64(s.m.panics); n != 0 {
		t.Errorf("handler_panics_total = %v, want 0 (no panic on the way)", n)
	}
	if got := s.counts.totals()["internal_error"]; got != 1 {
		t.Errorf("internal_error total = %d, want 1", got)
	}
}

// blockingSolve parks every solve until release is closed, then solves.
type blockingSolve struct {
	started chan struct{}
	release chan struct{}
	calls   atomic.Int64
}

func newBlockingSolve() *blockingSolve {
	return &blockingSolve{started: make(chan struct{}, 100), release: make(chan struct{})}
}

func (b *blockingSolve) solve(ctx context.Context, g solver.Grid, limit int) (solver.Result, error) {
	b.calls.Add(1)
	b.started <- struct{}{}
	select {
	case <-b.release:
		return solver.SolveContext(ctx, g, limit)
	case <-ctx.Done():
		return solver.Result{}, solver.ErrBudget
	}
}

func TestOverload(t *testing.T) {
	const pool, queue, clients = 2, 3, 12
	s := newTestService(t, cfg(func(c *Config) {
		c.PoolSize = pool
		c.QueueSize = queue
		c.QueueTimeout = 10 * time.Second
		c.SolveTimeout = 10 * time.Second
	}))
	b := newBlockingSolve()
	s.solve = b.solve
	type result struct {
		code  int
		retry string
		took  time.Duration
	}
	results := make(chan result, clients)
	for range clients {
		go func() {
			start := time.Now()
			w := serve(s, "GET", "/sudoku?puzzle="+easy, nil)
			results <- result{w.Code, w.Header().Get("Retry-After"), time.Since(start)}
		}()
	}
	// Everything beyond pool+queue is refused without waiting for a slot.
	var busy int
	for range clients - pool - queue {
		r := <-results
		if r.code != 503 || r.retry == "" {
			t.Fatalf("beyond pool+queue: %d Retry-After %q, want 503 with Retry-After", r.code, r.retry)
		}
		busy++
	}
	if got := s.pool.Waiting(); got != queue {
		t.Errorf("queue depth = %d, want %d", got, queue)
	}
	close(b.release)
	for range pool + queue {
		if r := <-results; r.code != 200 {
			t.Errorf("within pool+queue: %d, want 200", r.code)
		}
	}
	totals := s.counts.totals()
	if totals["too_busy"] != uint64(busy) || totals["solved"] != pool+queue {
		t.Errorf("totals = %v, want %d too_busy and %d solved", totals, busy, pool+queue)
	}
}

func TestQueueDeadlineDropsWork(t *testing.T) {
	s := newTestService(t, cfg(func(c *Config) {
		c.PoolSize = 1
		c.QueueSize = 4
		c.QueueTimeout = 30 * time.Millisecond
		c.SolveTimeout = 10 * time.Second
	}))
	b := newBlockingSolve()
	s.solve = b.solve
	first := make(chan int)
	go func() { first <- serve(s, "GET", "/sudoku?puzzle="+easy, nil).Code }()
	<-b.started
	start := time.Now()
	w := serve(s, "GET", "/sudoku?puzzle="+easy, nil)
	if w.Code != 503 {
		t.Fatalf("queued past its deadline: %d, want 503", w.Code)
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Errorf("503 after %v, before the 30ms queue deadline", took)
	}
	close(b.release)
	if code := <-first; code != 200 {
		t.Errorf("first request = %d, want 200", code)
	}
	if n := b.calls.Load(); n != 1 {
		t.Errorf("solver ran %d times, want 1: expired queued work must be dropped", n)
	}
}

func TestStuckSolveFreesSlot(t *testing.T) {
	s := newTestService(t, cfg(func(c *Config) { c.PoolSize = 1; c.QueueSize = 0; c.SolveTimeout = 50 * time.Millisecond }))
	b := newBlockingSolve() // never released: only the deadline ends it
	s.solve = b.solve
	w := serve(s, "GET", "/sudoku?puzzle="+easy, nil)
	if w.Code != 503 || !strings.Contains(decodeError(t, w)["error"], "budget") {
		t.Fatalf("stuck solve: %d %q, want 503 naming the budget", w.Code, w.Body)
	}
	s.solve = solver.SolveContext
	if w := serve(s, "GET", "/sudoku?puzzle="+easy, nil); w.Code != 200 {
		t.Fatalf("after the stuck solve: %d %q, want 200 (slot freed)", w.Code, w.Body)
	}
}

func TestBatch(t *testing.T) {
	s := newTestService(t, cfg(func(c *Config) { c.PoolSize = 2; c.MaxBatchLines = 5; c.MaxBodyBytes = 1000 }))
	body := "a:" + easy + "\n" + "b:" + dead + "\n\n# comment\n" + "c:12\n" + easy + "\r\n"
	w := serve(s, "POST", "/sudoku", strings.NewReader(body))
	if w.Code != 200 {
		t.Fatalf("batch = %d %q", w.Code, w.Body)
	}
	if w.Header().Get("X-Accel-Buffering") != "no" || w.Header().Get("X-Sudoku-Worker") != "test-1" {
		t.Errorf("batch headers = %v", w.Header())
	}
	got := strings.Split(strings.TrimSuffix(w.Body.String(), "\n"), "\n")
	sort.Strings(got)
	want := []string{solution, "a:" + solution, "b:NoSolution", "c:error: got 2 cells, want 81"}
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("batch answers = %q, want (in any order) %q", got, want)
	}

	for _, tt := range []struct {
		name, body string
		status     int
	}{
		{"too many lines", strings.Repeat(easy+"\n", 6), 413},
		{"too big", strings.Repeat("#", 1001), 413},
		{"empty", "\n\n", 400},
	} {
		w := serve(s, "POST", "/sudoku", strings.NewReader(tt.body))
		if w.Code != tt.status {
			t.Errorf("%s: %d %q, want %d", tt.name, w.Code, w.Body, tt.status)
		}
		decodeError(t, w)
	}
}

// Error messages reach clients as written: '<', '>' and '&' are not
// escaped to \u003c and friends (JSON does not require it).
func TestErrorBodyNotHTMLEscaped(t *testing.T) {
	s := newTestService(t, cfg())
	w := serve(s, "POST", "/sudoku", strings.NewReader("\n"))
	if w.Code != 400 {
		t.Fatalf("empty batch = %d %q, want 400", w.Code, w.Body)
	}
	if !strings.Contains(w.Body.String(), "<81 cells>") {
		t.Errorf("empty batch body = %q, want the literal <81 cells>", w.Body)
	}
	if got := decodeError(t, w)["error"]; got != errEmptyBatch.Error() {
		t.Errorf("empty batch error = %q, want %q", got, errEmptyBatch.Error())
	}
	if got, want := string(appendError(nil, "a<b>&c", "x&y")), `{"error":"a<b>&c","id":"x&y"}`+"\n"; got != want {
		t.Errorf("appendError = %q, want %q", got, want)
	}
}

// A line with a ':' has an id, possibly empty, and its answer repeats it
// as sent (solver.SplitLine): ":<cells>" answers ":<answer>", whether the
// line solves, fails or finds no slot.
func TestBatchEmptyID(t *testing.T) {
	s := newTestService(t, cfg())
	body := ":" + easy + "\n" + ":" + dead + "\n" + ":12\n" + "a::" + easy + "\n"
	w := serve(s, "POST", "/sudoku?unique=1", strings.NewReader(body))
	if w.Code != 200 {
		t.Fatalf("batch = %d %q", w.Code, w.Body)
	}
	got := strings.Split(strings.TrimSuffix(w.Body.String(), "\n"), "\n")
	sort.Strings(got)
	want := []string{":" + solution + " unique", ":NoSolution", ":error: got 2 cells, want 81", "a::error: " + errBadID.Error()}
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("batch answers = %q, want (in any order) %q", got, want)
	}
	if got := string(s.busyLine([]byte(":" + easy))); got != ":ServerTooBusy\n" {
		t.Errorf("busy line with an empty id = %q, want \":ServerTooBusy\\n\"", got)
	}
	if got := string(s.busyLine([]byte(easy))); got != "ServerTooBusy\n" {
		t.Errorf("busy line without an id = %q, want \"ServerTooBusy\\n\"", got)
	}
}

func TestBatchUnique(t *testing.T) {
	s := newTestService(t, cfg())
	w := serve(s, "POST", "/sudoku?unique=YES", strings.NewReader("a:"+easy+"\nb:"+open+"\nc:"+dead+"\n"))
	if w.Code != 200 {
		t.Fatalf("POST ?unique=YES = %d %q", w.Code, w.Body)
	}
	got := strings.Split(strings.TrimSuffix(w.Body.String(), "\n"), "\n")
	sort.Strings(got)
	if len(got) != 3 || got[0] != "a:"+solution+" unique" || !strings.HasPrefix(got[1], "b:") ||
		!strings.HasSuffix(got[1], " not-unique") || got[2] != "c:NoSolution" {
		t.Errorf("POST ?unique=YES answers = %q, want a unique, b not-unique, c NoSolution", got)
	}
	if w := serve(s, "POST", "/sudoku", strings.NewReader("a:"+easy+"\n")); w.Body.String() != "a:"+solution+"\n" {
		t.Errorf("POST without unique = %q, want the bare solution", w.Body)
	}
	for _, q := range []string{"unique=maybe", "format=json", "format=xml"} {
		w := serve(s, "POST", "/sudoku?"+q, strings.NewReader("a:"+easy+"\n"))
		if w.Code != 400 {
			t.Errorf("POST ?%s = %d %q, want 400", q, w.Code, w.Body)
			continue
		}
		decodeError(t, w)
	}
}

func TestBatchBusyLines(t *testing.T) {
	s := newTestService(t, cfg(func(c *Config) { c.PoolSize = 1; c.QueueSize = 0; c.BatchParallel = 1 }))
	b := newBlockingSolve()
	s.solve = b.solve
	single := make(chan int)
	go func() { single <- serve(s, "GET", "/sudoku?puzzle="+easy, nil).Code }()
	<-b.started
	w := serve(s, "POST", "/sudoku", strings.NewReader("x:"+easy+"\n"))
	if w.Body.String() != "x:ServerTooBusy\n" {
		t.Errorf("batch line with the pool full = %q, want x:ServerTooBusy", w.Body)
	}
	close(b.release)
	<-single
}

func TestPool(t *testing.T) {
	p := newPool(1, 1, time.Hour)
	if _, err := p.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, err := p.acquire(ctx); done <- err }()
	for p.Waiting() != 1 {
		time.Sleep(time.Millisecond)
	}
	if _, err := p.acquire(context.Background()); !errors.Is(err, errBusy) {
		t.Errorf("Acquire with a full queue = %v, want errBusy", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Acquire = %v, want context.Canceled", err)
	}
	p.release()
	if p.Busy() != 0 || p.Waiting() != 0 {
		t.Errorf("busy/waiting = %d/%d after release, want 0/0", p.Busy(), p.Waiting())
	}
	// Work already cancelled must not take a slot, even a free one.
	if _, err := p.acquire(ctx); !errors.Is(err, context.Canceled) || p.Busy() != 0 {
		t.Errorf("Acquire with a cancelled ctx = %v, busy %d; want context.Canceled and no slot", err, p.Busy())
	}
}

func TestPoolRefusesALongExpectedWait(t *testing.T) {
	const timeout = 100 * time.Millisecond
	p := newPool(1, 100, timeout)
	if _, err := p.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The queue moves one caller every 5 ms or more.
	for range 40 {
		got := make(chan error)
		go func() { _, err := p.acquire(context.Background()); got <- err }()
		for p.Waiting() != 1 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond)
		p.release()
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	}
	if got := p.expectedWait(1); got < 3*time.Millisecond {
		t.Fatalf("expectedWait(1) = %v with a slot freed every 5ms or more, want about 5ms", got)
	}
	// Queue callers until one is refused: that must happen well before the
	// queue (100) is full, and at once rather than after the timeout.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // the callers still queued
	for n := 1; n <= 100; n++ {
		start := time.Now()
		refused := make(chan struct{}, 1)
		go func() {
			if _, err := p.acquire(ctx); errors.Is(err, errBusy) {
				refused <- struct{}{}
			}
		}()
		for p.Waiting() < n && len(refused) == 0 {
			time.Sleep(time.Millisecond)
		}
		if len(refused) == 0 {
			continue // queued
		}
		if d := time.Since(start); d >= timeout {
			t.Errorf("refusal of caller %d took %v: it waited out the timeout", n, d)
		}
		if n == 100 {
			t.Errorf("refused only at caller %d, when the queue was full", n)
		}
		return
	}
	t.Fatal("no caller refused")
}

// stallAfter solves the first n puzzles and parks every later one until
// its context ends.
type stallAfter struct {
	n     int64
	calls atomic.Int64
}

func (f *stallAfter) solve(ctx context.Context, g solver.Grid, limit int) (solver.Result, error) {
	if f.calls.Add(1) <= f.n {
		return solver.SolveContext(ctx, g, limit)
	}
	<-ctx.Done()
	return solver.Result{}, solver.ErrBudget
}

// The batch deadline answers the lines still open ServerTooBusy, the one
// in flight included, and solves no more of them.
func TestBatchDeadline(t *testing.T) {
	s := newTestService(t, cfg(func(c *Config) {
		c.PoolSize = 1
		c.BatchParallel = 1
		c.SolveTimeout = 5 * time.Second
		c.BatchTimeout = 200 * time.Millisecond
	}))
	f := &stallAfter{n: 1}
	s.solve = f.solve
	w := serve(s, "POST", "/sudoku", strings.NewReader("a:"+easy+"\nb:"+easy+"\nc:"+easy+"\n"+easy+"\n"))
	if w.Code != 200 {
		t.Fatalf("batch = %d %q", w.Code, w.Body)
	}
	want := "a:" + solution + "\nb:ServerTooBusy\nc:ServerTooBusy\nServerTooBusy\n"
	if w.Body.String() != want {
		t.Errorf("batch past its deadline = %q, want %q", w.Body, want)
	}
	if n := f.calls.Load(); n != 2 {
		t.Errorf("solver ran %d times, want 2 (lines after the deadline must not be solved)", n)
	}
	if s.pool.Busy() != 0 {
		t.Errorf("pool busy = %d after the batch, want 0", s.pool.Busy())
	}
	if got := s.counts.batchLines()["too_busy"]; got != 3 {
		t.Errorf("too_busy lines = %d, want 3", got)
	}
}

func TestInternalHandler(t *testing.T) {
	s := newTestService(t, cfg())
	h := s.InternalHandler(promRegistry(t, s))
	get := func(method, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w
	}
	if w := get("GET", "/healthz"); w.Code != 200 || w.Header().Get("X-Sudoku-Worker") != "test-1" {
		t.Errorf("/healthz = %d, X-Sudoku-Worker %q", w.Code, w.Header().Get("X-Sudoku-Worker"))
	}
	if w := get("GET", "/readyz"); w.Code != 200 {
		t.Errorf("/readyz = %d, want 200", w.Code)
	}
	serve(s, "GET", "/sudoku?puzzle="+easy, nil)
	serve(s, "POST", "/sudoku", strings.NewReader(easy+"\n"))
	serve(s, "GET", "/sudoku/stats", nil)
	serve(s, "GET", "/nope", nil)
	w := get("GET", "/metrics")
	for _, want := range []string{
		`sudoku_requests_total{outcome="solved",route="get"} 1`,
		`sudoku_requests_total{outcome="ok",route="batch"} 1`,
		`sudoku_requests_total{outcome="ok",route="stats"} 1`,
		`sudoku_requests_total{outcome="not_found",route="other"} 1`,
		`sudoku_batch_lines_total{outcome="solved"} 1`,
		"sudoku_solve_duration_seconds_count 2",
		"sudoku_queue_wait_seconds_count 2",
		"sudoku_pool_slots ",
		"sudoku_draining 0",
	} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// Issue 31: profiles have a listener of their own (sudoku-fcgi
	// -pprof-listen), and the lab's free-os-memory switch is gone.
	if w := get("GET", "/debug/pprof/"); w.Code != 404 {
		t.Errorf("/debug/pprof/ on the internal listener = %d, want 404", w.Code)
	}
	if w := get("POST", "/debug/free-os-memory"); w.Code != 404 {
		t.Errorf("POST /debug/free-os-memory = %d %q, want 404", w.Code, w.Body)
	}
	s.SetDraining(true)
	if w := get("GET", "/readyz"); w.Code != 503 {
		t.Errorf("/readyz while draining = %d, want 503", w.Code)
	}
	if w := get("GET", "/metrics"); !strings.Contains(w.Body.String(), "sudoku_draining 1") {
		t.Errorf("/metrics while draining lacks sudoku_draining 1")
	}
}

var nopLog = zerolog.Nop()

// A batch shares the pool fairly: a single request queued behind it gets
// the next free slot, not the end of the batch.
func TestBatchDoesNotStarveSingles(t *testing.T) {
	s := newTestService(t, cfg(func(c *Config) { c.PoolSize = 1; c.QueueTimeout = 200 * time.Millisecond }))
	s.solve = func(ctx context.Context, g solver.Grid, limit int) (solver.Result, error) {
		time.Sleep(5 * time.Millisecond)
		return solver.SolveContext(ctx, g, limit)
	}
	body := strings.Repeat(easy+"\n", 200) // about 1 s of solving on one slot
	done := make(chan string)
	go func() { done <- serve(s, "POST", "/sudoku", strings.NewReader(body)).Body.String() }()
	for s.pool.Busy() == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := range 3 {
		if w := serve(s, "GET", "/sudoku?puzzle="+easy, nil); w.Code != 200 {
			t.Errorf("single request %d during a batch = %d %q, want 200", i, w.Code, w.Body)
		}
	}
	if out := <-done; strings.Count(out, solution) != 200 {
		t.Errorf("batch solved %d of 200", strings.Count(out, solution))
	}
}

func TestAccessLog(t *testing.T) {
	var buf strings.Builder
	s := New(cfg(func(c *Config) { c.WorkerID = "w"; c.AccessLog = true }), zerolog.New(zerolog.SyncWriter(&buf)))
	serve(s, "GET", "/sudoku?puzzle="+dead, nil, "X-Request-Id", "abc123")
	var line map[string]any
	if err := json.Unmarshal([]byte(buf.String()), &line); err != nil {
		t.Fatalf("access line %q: %v", buf.String(), err)
	}
	for k, want := range map[string]any{
		"message": "request", "req_id": "abc123", "status": float64(422), "outcome": "no_solution",
		"method": "GET", "path": "/sudoku", "level": "info",
	} {
		if line[k] != want {
			t.Errorf("access line %s = %v, want %v", k, line[k], want)
		}
	}
	for _, k := range []string{"duration", "queue_wait", "solve_duration"} {
		if _, ok := line[k].(float64); !ok {
			t.Errorf("access line lacks %s: %v", k, line)
		}
	}
}

// Issue 31: every answer of the API, errors and streamed batches
// included, carries X-Content-Type-Options: nosniff.
func TestHandlerNoSniff(t *testing.T) {
	s := newTestService(t, cfg())
	for _, tt := range []struct {
		method, target, body string
		status               int
	}{
		{"GET", "/sudoku?puzzle=" + easy, "", 200},
		{"GET", "/sudoku?puzzle=" + easy + "&format=text", "", 200},
		{"HEAD", "/sudoku?puzzle=" + easy, "", 200},
		{"GET", "/sudoku?puzzle=1", "", 400},
		{"GET", "/sudoku?puzzle=" + dead, "", 422},
		{"POST", "/sudoku", easy + "\n", 200},
		{"POST", "/sudoku", "", 400},
		{"DELETE", "/sudoku", "", 405},
		{"GET", "/sudoku/stats", "", 200},
		{"GET", "/nope", "", 404},
	} {
		w := serve(s, tt.method, tt.target, strings.NewReader(tt.body))
		if w.Code != tt.status || w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s = %d, X-Content-Type-Options %q; want %d, nosniff", tt.method, tt.target, w.Code, w.Header().Get("X-Content-Type-Options"), tt.status)
		}
	}
	s.SetDraining(true)
	if w := serve(s, "GET", "/sudoku?puzzle="+easy, nil); w.Code != 503 || w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("draining GET = %d, X-Content-Type-Options %q; want 503, nosniff", w.Code, w.Header().Get("X-Content-Type-Options"))
	}
}
