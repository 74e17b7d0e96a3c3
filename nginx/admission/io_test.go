package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
)

// workerText is a worker's /metrics with the figures the law reads (the
// names fcgi/metrics.go and fcgi/fcgiserver register); requestSec is
// fastcgi_request_seconds_total.
func workerText(answered, busy, solves int, solveSec float64, waits int, waitSec, requestSec float64) string {
	return fmt.Sprintf(`# TYPE sudoku_requests_total counter
sudoku_requests_total{outcome="solved",route="get"} %d
sudoku_requests_total{outcome="no_solution",route="get"} 1
sudoku_requests_total{outcome="too_busy",route="get"} %d
sudoku_requests_total{outcome="solved",route="batch"} 999
sudoku_requests_total{outcome="too_busy",route="stats"} 999
# TYPE sudoku_solve_duration_seconds histogram
sudoku_solve_duration_seconds_bucket{le="+Inf"} %d
sudoku_solve_duration_seconds_sum %g
sudoku_solve_duration_seconds_count %d
# TYPE sudoku_request_duration_seconds histogram
sudoku_request_duration_seconds_bucket{le="+Inf"} %d
sudoku_request_duration_seconds_sum 999
sudoku_request_duration_seconds_count %d
# TYPE sudoku_fastcgi_request_seconds_total counter
sudoku_fastcgi_request_seconds_total %g
# TYPE sudoku_queue_wait_seconds histogram
sudoku_queue_wait_seconds_bucket{le="+Inf"} %d
sudoku_queue_wait_seconds_sum %g
sudoku_queue_wait_seconds_count %d
# TYPE sudoku_pool_slots gauge
sudoku_pool_slots 2
# TYPE sudoku_pool_slots_busy gauge
sudoku_pool_slots_busy 1
# TYPE sudoku_pool_queue_depth gauge
sudoku_pool_queue_depth 3
`, answered, busy, solves, solveSec, solves, answered, answered, requestSec, waits, waitSec, waits)
}

func TestWindowFromTwoScrapes(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a, err := parseCounters(strings.NewReader(workerText(100, 10, 110, 0.5, 110, 0.1, 1)), t0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseCounters(strings.NewReader(workerText(300, 30, 330, 1.6, 330, 1.2, 7)), t0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	w, ok := window("x", a, b)
	if !ok {
		t.Fatal("window(a, b) = false")
	}
	want := workerReport{ID: "x", Answered: 100, Busy503: 10, Slots: 2, QueueWait: 5 * time.Millisecond, InFlight: 3}
	if w.Answered != want.Answered || w.Busy503 != want.Busy503 || w.Slots != want.Slots ||
		w.QueueWait.Round(time.Microsecond) != want.QueueWait || w.InFlight != want.InFlight {
		t.Errorf("window = %+v, want %+v", w, want)
	}
	if _, ok := window("x", b, a); ok {
		t.Error("window over a counter reset (a restart) = true, want false")
	}
	if _, err := parseCounters(strings.NewReader("garbage{"), t0); err == nil {
		t.Error("parseCounters(garbage) = nil error")
	}
}

// fakeResolver maps a host to the listed addresses.
type fakeResolver map[string][]string

func (f fakeResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// fakeWorker serves a worker's /metrics whose counters grow by rate per
// scrape.
type fakeWorker struct {
	mu    sync.Mutex
	n     int
	rate  int
	srv   *httptest.Server
	port  string
	wait  float64 // seconds per answer
	solve float64 // seconds per solve
	// inFlight is the mean requests in flight the worker shows over a
	// scrape (request seconds per scrape).
	inFlight float64
}

func newFakeWorker(t *testing.T, rate int) *fakeWorker {
	f := &fakeWorker{rate: rate, solve: 0.0004}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.n++
		n := f.n * f.rate
		text := workerText(n, 0, n, float64(n)*f.solve, n, float64(n)*f.wait, float64(f.n)*f.inFlight)
		f.mu.Unlock()
		fmt.Fprint(w, text)
	}))
	t.Cleanup(f.srv.Close)
	_, f.port, _ = net.SplitHostPort(f.srv.Listener.Addr().String())
	return f
}

func TestScraperResolvesAndSkipsFailures(t *testing.T) {
	w := newFakeWorker(t, 100)
	s := &Scraper{Targets: []string{"workers:" + w.port, "gone:1", "bad"},
		resolver: fakeResolver{"workers": {"127.0.0.1"}}}
	now := time.Now()
	if ws, failed := s.scrape(context.Background(), now); len(ws) != 0 || failed != 2 {
		t.Fatalf("first scrape: %d workers, %d failed; want 0 (no window yet), 2", len(ws), failed)
	}
	ws, failed := s.scrape(context.Background(), now.Add(time.Second))
	if len(ws) != 1 || failed != 2 {
		t.Fatalf("second scrape: %d workers, %d failed; want 1, 2", len(ws), failed)
	}
	if ws[0].Answered != 100 || ws[0].ID != "127.0.0.1:"+w.port {
		t.Errorf("worker = %+v, want 100 answers/s from 127.0.0.1:%s", ws[0], w.port)
	}
}

func TestQueueForBoundsTheWait(t *testing.T) {
	cfg := DefaultConfig()
	for _, rate := range []float64{1, 7, 50, 999, 8000, 123456} {
		q := queueFor(rate, cfg)
		if q.Rate < 1 || float64(q.Burst)/float64(q.Rate) > cfg.queueMax.Seconds() && q.Burst > 1 {
			t.Errorf("queueFor(%v) = %+v: burst / rate over %v", rate, q, cfg.queueMax)
		}
		if q.Delay > q.Burst || q.Burst < 1 {
			t.Errorf("queueFor(%v) = %+v: want 1 <= burst, delay <= burst", rate, q)
		}
	}
	if q := queueFor(8000, cfg); q != (queue{Rate: 8000, Burst: 400, Delay: 80}) {
		t.Errorf("queueFor(8000) = %+v, want 8000 r/s, burst 400, delay 80", q)
	}
	f, err := render(queueFor(8000, cfg), logLines{Socket: "/run/sudoku-edge/log.sock", Every: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"limit_req_zone $sudoku_admission_key zone=sudoku_admit:1m rate=8000r/s;",
		"log_format sudoku_admission '" + logFormat + "';",
		"access_log syslog:server=unix:/run/sudoku-edge/log.sock,nohostname,tag=nginx sudoku_admission;"} {
		if !strings.Contains(string(f.HTTP), want) {
			t.Errorf("http include lacks %q:\n%s", want, f.HTTP)
		}
	}
	for _, want := range []string{"limit_req zone=sudoku_admit burst=400 delay=80;", "limit_req_status 503;"} {
		if !strings.Contains(string(f.Location), want) {
			t.Errorf("location include lacks %q:\n%s", want, f.Location)
		}
	}
	sampled, err := render(queue{}, logLines{Socket: "/run/sudoku-edge/log.sock"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"log_format sudoku_admission '" + logFormat + "';",
		"access_log syslog:server=unix:/run/sudoku-edge/log.sock,nohostname,tag=nginx sudoku_admission if=$sudoku_log;",
		"map $sudoku_one_in_16 $sudoku_log_sampled {", `"~^(429|503)$" 0;`, `"~^[45]" 1;`} {
		if !strings.Contains(string(sampled.HTTP), want) {
			t.Errorf("sampled http include lacks %q:\n%s", want, sampled.HTTP)
		}
	}
	off, err := render(queue{}, logLines{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range [][]byte{off.HTTP, off.Location} {
		for _, line := range strings.Split(string(f), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				t.Errorf("off renders a directive: %q", line)
			}
		}
	}
	if _, err := render(queue{}, logLines{Socket: "/run/x;y"}); err == nil {
		t.Error("Render with a ';' in the socket path = nil error")
	}
}

func TestLogCounterCountsOverTheSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.sock")
	m := NewMetrics()
	c := &LogCounter{Path: path, Metrics: m}
	if err := c.listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.serve() }()
	conn, err := net.Dial("unixgram", path)
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{
		// In the sample: each counts sampleEvery (16).
		"<190>Dec  1 19:00:00 nginx: 200 1 PASSED get 200 0.004",
		"<190>Dec  1 19:00:00 nginx: 200 1 DELAYED get 503, 200 0.001, 0.002",
		"<190>Dec  1 19:00:00 nginx: 503 1 REJECTED get -",
		"<190>Dec  1 19:00:00 nginx: 503 1 REJECTED get -",
		"<190>Dec  1 19:00:00 nginx: 429 1 REJECTED other -",
		// Sent for its status alone: counts once, by status only.
		"<190>Dec  1 19:00:00 nginx: 404 0 - get -",
		// nginx's 502 "no live upstreams", answered as 503; a worker's own busy 503 after a retry.
		"<190>Dec  1 19:00:00 nginx: 503 1 - other 502 0.000",
		"<190>Dec  1 19:00:00 nginx: 503 1 - other 503, 503 0.001, 0.001",
		"<190>Dec  1 19:00:00 nginx: nonsense",
	}
	for _, l := range lines {
		if _, err := conn.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(m.logErrors) < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	c.close()
	if err := <-done; err != nil {
		t.Fatalf("serve() = %v", err)
	}
	if got, want := c.totals(), (logTotals{Passed: 32, Delayed: 16, Rejected: 32, Upstream: 32, UpstreamSeconds: 0.096}); math.Abs(got.UpstreamSeconds-want.UpstreamSeconds) > 1e-9 ||
		got.Passed != want.Passed || got.Delayed != want.Delayed || got.Rejected != want.Rejected || got.Upstream != want.Upstream {
		t.Errorf("totals() = %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		code, source string
		want         float64
	}{{"200", "worker", 32}, {"503", "nginx", 48}, {"503", "worker", 16}, {"429", "nginx", 16}, {"404", "nginx", 1}} {
		if got := testutil.ToFloat64(m.responses.WithLabelValues(tc.code, tc.source)); got != tc.want {
			t.Errorf("responses{code=%s,source=%s} = %v, want %v", tc.code, tc.source, got, tc.want)
		}
	}
	if got := testutil.ToFloat64(m.admission.WithLabelValues("rejected")); got != 32 {
		t.Errorf("admission{rejected} = %v, want 32", got)
	}
}

// The loop renders the start rate, cuts it when the workers are deep,
// and holds it once they are within the deadband: one apply per change,
// none after.
func TestLoopAppliesOnlyOnChange(t *testing.T) {
	w := newFakeWorker(t, 1000) // 1,000 answers per scrape
	w.inFlight = 20             // 10 per slot: congested
	cfg := DefaultConfig()
	cfg.Interval = time.Nanosecond
	var applied []includeFiles
	m := NewMetrics()
	if err := m.Register(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	status := filepath.Join(t.TempDir(), "admission.json")
	l := &Loop{Config: cfg, Metrics: m, Log: zerolog.Nop(), StatusFile: status,
		Scraper: &Scraper{Targets: []string{"127.0.0.1:" + w.port}},
		apply: applierFunc(func(_ context.Context, f includeFiles) error {
			applied = append(applied, f)
			return nil
		})}
	start, err := l.start()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(start.Location), "limit_req zone") {
		t.Errorf("start files carry a queue before any figure:\n%s", start.Location)
	}
	ctx := context.Background()
	now := time.Now()
	l.lastAt = now
	l.Scraper.scrape(ctx, now)
	l.step(ctx, now.Add(time.Second)) // the start: Max
	l.step(ctx, now.Add(2*time.Second))
	w.mu.Lock()
	w.inFlight = 4 // 2 per slot: within the deadband from now on
	w.mu.Unlock()
	for i := 3; i <= 30; i++ {
		l.step(ctx, now.Add(time.Duration(i)*time.Second))
	}
	if len(applied) != 2 {
		t.Fatalf("%d applies, want the start rate and one cut", len(applied))
	}
	last := string(applied[len(applied)-1].HTTP)
	var rate float64
	if i := strings.Index(last, "rate="); i < 0 {
		t.Fatalf("last zone has no rate:\n%s", last)
	} else if _, err := fmt.Sscanf(last[i:], "rate=%fr/s", &rate); err != nil {
		t.Fatalf("last zone: %v\n%s", err, last)
	}
	// The cut: what the worker answered (1,000/s) x cut.
	if want := 1000 * cfg.cut; math.Abs(rate-want) > 1 {
		t.Errorf("last zone's rate %v, want %v", rate, want)
	}
	b, err := os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Rate, Capacity float64
	}
	if err := json.Unmarshal(b, &st); err != nil || math.Abs(st.Rate-rate) > 0.5 || st.Capacity != 1000 {
		t.Errorf("status file %s (%v), want rate %v and capacity 1000", b, err, rate)
	}
	if got := testutil.ToFloat64(m.rate); math.Abs(got-rate) > 0.5 {
		t.Errorf("sudoku_edge_admission_rate = %v, want the rendered %v", got, rate)
	}
}
