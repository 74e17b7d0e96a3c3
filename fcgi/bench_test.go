package fcgi

import (
	"bufio"
	"bytes"
	"net/http"
	"net/url"
	"os"
	"strings"
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
