package fcgi

import (
	"bufio"
	"bytes"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sudoku-fcgi/fcgi/fcgitest"
)

// discardWriter is a reusable http.ResponseWriter, so the benchmark counts
// the handler's own allocations, not httptest's.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

func loadPuzzles(b *testing.B) []string {
	b.Helper()
	f, err := os.Open("testdata/test1000")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var ps []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); len(l) >= 81 {
			ps = append(ps, l[:81])
		}
	}
	return ps
}

// BenchmarkHandler measures the public handler per request, solver
// included: "easy" isolates the handler's own cost; "test1000" rotates the
// benchmark puzzles of testdata/test1000 (a copy of
// tests/reliability/testdata/test1000).
func BenchmarkHandler(b *testing.B) {
	for _, set := range []struct {
		name    string
		puzzles func(*testing.B) []string
	}{
		{"easy", func(*testing.B) []string { return []string{easy} }},
		{"test1000", loadPuzzles},
	} {
		b.Run(set.name, func(b *testing.B) {
			ps := set.puzzles(b)
			s := New(cfg(func(c *Config) { c.WorkerID = "bench"; c.AccessLog = false }), nopLog)
			reqs := make([]*http.Request, len(ps))
			for i, p := range ps {
				reqs[i] = &http.Request{Method: "GET", URL: &url.URL{Path: "/sudoku", RawQuery: "puzzle=" + p}, Header: http.Header{}}
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				w := &discardWriter{h: http.Header{}}
				i := 0
				for pb.Next() {
					clear(w.h)
					s.ServeHTTP(w, reqs[i%len(reqs)])
					if w.code != 200 {
						b.Fatalf("status %d", w.code)
					}
					i++
				}
			})
		})
	}
}

// BenchmarkFastCGI is one request and answer over a real FastCGI
// connection (loopback TCP), net/http/fcgi's child included.
func BenchmarkFastCGI(b *testing.B) {
	s := New(cfg(func(c *Config) { c.WorkerID = "bench"; c.AccessLog = false }), nopLog)
	c := fcgitest.Dial(b, startServer(b, s, opts()).addr)
	req := fcgitest.Request(1, "GET", "/sudoku?puzzle="+easy, "bench", map[string]string{"HTTP_X_REQUEST_ID": "0123456789abcdef"}, nil)
	b.ReportAllocs()
	for b.Loop() {
		c.Send(req)
		if _, err := c.ReadStdout(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFastCGIBusy is BenchmarkFastCGI with the one solver slot taken
// and no queue, so every request gets the worker's busy 503: against
// BenchmarkFastCGI, what a worker's rejection costs next to an answer
// (tests/bench/RESULTS.md, "Rejections").
func BenchmarkFastCGIBusy(b *testing.B) {
	s := New(cfg(func(c *Config) {
		c.WorkerID = "bench"
		c.AccessLog = false
		c.PoolSize = 1
		c.QueueSize = 0
		c.SolveTimeout = time.Minute
	}), nopLog)
	hold := newBlockingSolve()
	s.solve = hold.solve
	addr := startServer(b, s, opts()).addr
	holder := fcgitest.Dial(b, addr)
	holder.Send(fcgitest.Request(1, "GET", "/sudoku?puzzle="+easy, "bench", nil, nil))
	<-hold.started
	defer close(hold.release)
	c := fcgitest.Dial(b, addr)
	req := fcgitest.Request(1, "GET", "/sudoku?puzzle="+easy, "bench", map[string]string{"HTTP_X_REQUEST_ID": "0123456789abcdef"}, nil)
	b.ReportAllocs()
	for b.Loop() {
		c.Send(req)
		out, err := c.ReadStdout()
		if err != nil {
			b.Fatal(err)
		}
		if !bytes.HasPrefix(out, []byte("Status: 503")) {
			b.Fatalf("answer %.40q, want a 503", out)
		}
	}
}

// BenchmarkSolveBesideStats times one client's GETs while 8 others poll
// /sudoku/stats, each once a millisecond (8,000 a second, as many
// addresses within nginx's per-client limits would): the solving client's
// p50 and p99 in microseconds, a figure to compare before and after a
// change of the stats path (tests/bench/RESULTS.md), never asserted.
func BenchmarkSolveBesideStats(b *testing.B) {
	s := New(cfg(func(c *Config) { c.WorkerID = "bench"; c.AccessLog = false }), nopLog)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			w := &discardWriter{h: http.Header{}}
			r := &http.Request{Method: "GET", URL: &url.URL{Path: "/sudoku/stats"}, Header: http.Header{}}
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				clear(w.h)
				s.ServeHTTP(w, r)
			}
		})
	}
	w := &discardWriter{h: http.Header{}}
	req := &http.Request{Method: "GET", URL: &url.URL{Path: "/sudoku", RawQuery: "puzzle=" + easy}, Header: http.Header{}}
	ds := make([]time.Duration, 0, 1<<16)
	for b.Loop() {
		clear(w.h)
		t := time.Now()
		s.ServeHTTP(w, req)
		ds = append(ds, time.Since(t))
	}
	close(stop)
	wg.Wait()
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(ds[len(ds)*99/100].Nanoseconds())/1e3, "p99-us")
}
