package load

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"sudoku-fcgi/solver"
)

func TestBatch(t *testing.T) {
	ps, sols := testPuzzles(t)
	// The fake answers POST lines in reverse order; two answers are wrong,
	// one says ServerTooBusy and one NoSolution.
	mangle := func(p, sol string) string {
		switch p {
		case ps[1].Text, ps[4].Text:
			return sol[:80] + "0"
		case ps[8].Text:
			return "ServerTooBusy"
		case ps[10].Text:
			return "NoSolution"
		}
		return sol
	}
	for _, tc := range []struct {
		name string
		size int
	}{{"get", 0}, {"post one", 1}, {"post 7", 7}, {"post all", 20}} {
		t.Run(tc.name, func(t *testing.T) {
			url := newFake(t, &fake{sols: sols, mangle: mangle})
			res, err := Batch(context.Background(), BatchConfig{
				Client: newClient(t, url, 3, 5*time.Second, false), Puzzles: ps, Target: url, Conns: 3, Size: tc.size,
			})
			if err != nil {
				t.Fatalf("Batch: %v", err)
			}
			if tc.size == 0 {
				// Over GET the fake sends the mangled text as the solution.
				if res.Sent != 20 || res.OK != 16 || res.Wrong != 4 {
					t.Errorf("Batch(GET) sent %d ok %d wrong %d, errors %v; want 20, 16, 4", res.Sent, res.OK, res.Wrong, res.Errors)
				}
				return
			}
			if res.Sent != 20 || res.Received != 20 || res.OK != 16 || res.Wrong != 2 ||
				res.Errors["503_busy"] != 1 || res.Errors["4xx"] != 1 {
				t.Errorf("Batch(-b %d) sent %d received %d ok %d wrong %d, errors %v; want 20, 20, 16, 2 wrong, 1 busy, 1 4xx",
					tc.size, res.Sent, res.Received, res.OK, res.Wrong, res.Errors)
			}
		})
	}
}

// Every error kind is told apart.
func TestErrorKinds(t *testing.T) {
	ps, sols := testPuzzles(t)
	status := func(code int) func(http.ResponseWriter, *http.Request) bool {
		return func(w http.ResponseWriter, _ *http.Request) bool {
			w.WriteHeader(code)
			_, _ = w.Write([]byte(`{"error":"x","id":""}`))
			return true
		}
	}
	// A port with nothing listening: bind one, then close it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()

	for _, tc := range []struct {
		name   string
		before func(http.ResponseWriter, *http.Request) bool
		url    string
		want   string
	}{
		{"busy", status(503), "", "503_busy"},
		{"bad request", status(400), "", "4xx"},
		{"no solution", status(422), "", "4xx"},
		{"server fault", status(500), "", "5xx"},
		{"bad gateway", status(502), "", "5xx"},
		{"redirect", status(302), "", "other"},
		{"garbage body", func(w http.ResponseWriter, _ *http.Request) bool {
			_, _ = w.Write([]byte("not json"))
			return true
		}, "", "wrong"},
		{"reset", func(w http.ResponseWriter, _ *http.Request) bool {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0) // close with RST
				conn.Close()
			}
			return true
		}, "", "reset"},
		{"timeout", func(_ http.ResponseWriter, r *http.Request) bool {
			select {
			case <-time.After(10 * time.Second):
			case <-r.Context().Done():
			}
			return true
		}, "", "timeout"},
		{"refused", nil, closed, "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := tc.url
			if url == "" {
				url = newFake(t, &fake{sols: sols, before: tc.before})
			}
			// A short timeout only where a timeout is wanted: a busy
			// machine may make any other request slow.
			timeout := 5 * time.Second
			if tc.want == "timeout" {
				timeout = 300 * time.Millisecond
			}
			res, err := Batch(context.Background(), BatchConfig{
				Client: newClient(t, url, 2, timeout, false), Puzzles: ps[:4], Target: url, Conns: 2,
			})
			if err != nil {
				t.Fatalf("Batch: %v", err)
			}
			if res.Errors[tc.want] != 4 || res.ErrorCount() != 4 {
				t.Errorf("errors = %v, want 4 of kind %s", res.Errors, tc.want)
			}
		})
	}
}

// breakingBatch is a batch API that, the first time it sees a line, answers
// ServerTooBusy for every third line and cuts the stream (no final chunk)
// after the first half of a POST's lines; a line sent before gets its
// solution.
type breakingBatch struct {
	sols  map[string]string
	mu    sync.Mutex
	tries map[string]int
}

func (b *breakingBatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var lines []string
	sc := bufio.NewScanner(r.Body)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	// Seen counts by puzzle: ids restart at 0 in every POST.
	first := make([]bool, len(lines))
	b.mu.Lock()
	for n, line := range lines {
		_, cells, _ := solver.SplitLine(line)
		b.tries[cells]++
		first[n] = b.tries[cells] == 1
	}
	b.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	rc := http.NewResponseController(w)
	for n, line := range lines {
		id, cells, _ := solver.SplitLine(line)
		switch {
		case first[n] && n >= len(lines)/2:
			_ = rc.Flush()
			if conn, _, err := rc.Hijack(); err == nil {
				conn.Close() // mid-stream: the client reads an unfinished chunked body
			}
			return
		case first[n] && n%3 == 0:
			fmt.Fprintf(w, "%s:%s\n", id, solver.AnswerTooBusy)
		default:
			fmt.Fprintf(w, "%s:%s\n", id, b.sols[cells])
		}
	}
}

// A batch whose stream breaks mid-way and whose server answers some lines
// ServerTooBusy: without -retry the cut lines count as resets (a broken
// stream is not a clean end) and the busy ones as 503s; with -retry 1 every
// line is answered and checked, each counted once.
func TestBatchRetry(t *testing.T) {
	ps, sols := testPuzzles(t)
	for _, tc := range []struct {
		retry                         int
		ok, busy, reset, resent, sent int64
	}{
		// 20 puzzles in POSTs of 10: lines 0-4 answered (0 and 3 busy), 5-9 cut.
		{retry: 0, ok: 6, busy: 4, reset: 10, resent: 0, sent: 20},
		{retry: 1, ok: 20, busy: 0, reset: 0, resent: 14, sent: 20},
		{retry: 3, ok: 20, busy: 0, reset: 0, resent: 14, sent: 20},
	} {
		t.Run(fmt.Sprintf("retry %d", tc.retry), func(t *testing.T) {
			srv := httptest.NewServer(&breakingBatch{sols: sols, tries: map[string]int{}})
			t.Cleanup(srv.Close)
			res, err := Batch(context.Background(), BatchConfig{
				Client: newClient(t, srv.URL, 2, 5*time.Second, false), Puzzles: ps, Target: srv.URL,
				Conns: 2, Size: 10, Retry: tc.retry,
			})
			if err != nil {
				t.Fatalf("Batch: %v", err)
			}
			if res.Sent != tc.sent || res.OK != tc.ok || res.Errors["503_busy"] != tc.busy ||
				res.Errors["reset"] != tc.reset || res.Resent != tc.resent || res.ErrorCount() != tc.busy+tc.reset {
				t.Errorf("Batch(-retry %d): sent %d ok %d resent %d errors %v; want sent %d ok %d resent %d, %d busy, %d reset",
					tc.retry, res.Sent, res.OK, res.Resent, res.Errors, tc.sent, tc.ok, tc.resent, tc.busy, tc.reset)
			}
		})
	}
}

// A body that ends cleanly with lines unanswered is "other", not a reset:
// the two ends are told apart.
func TestBatchCleanEndUnanswered(t *testing.T) {
	ps, sols := testPuzzles(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sc := bufio.NewScanner(r.Body)
		for n := 0; sc.Scan(); n++ {
			if n%2 == 0 {
				id, cells, _ := solver.SplitLine(sc.Text())
				fmt.Fprintf(w, "%s:%s\n", id, sols[cells])
			}
		}
	}))
	t.Cleanup(srv.Close)
	res, err := Batch(context.Background(), BatchConfig{
		Client: newClient(t, srv.URL, 1, 5*time.Second, false), Puzzles: ps[:4], Target: srv.URL, Conns: 1, Size: 4,
	})
	if err != nil {
		t.Fatalf("Batch: %v", err)
	}
	if res.OK != 2 || res.Errors["other"] != 2 || res.Errors["reset"] != 0 {
		t.Errorf("Batch: ok %d errors %v; want 2 ok, 2 other, no reset", res.OK, res.Errors)
	}
}

// GETs with format=text are read as answer lines (solver.ParseAnswer): the
// id before the last ':' must be the puzzle's, the rest a solution.
func TestTextAnswers(t *testing.T) {
	ps, sols := testPuzzles(t)
	mangle := func(p, sol string) string {
		switch p {
		case ps[2].Text:
			return "NoSolution"
		case ps[3].Text:
			return sol + " multiple" // not a word of the API
		}
		return sol
	}
	url := newFake(t, &fake{sols: sols, mangle: mangle})
	res, err := Batch(context.Background(), BatchConfig{
		Client: newClient(t, url, 2, 5*time.Second, true), Puzzles: ps, Target: url, Conns: 2,
	})
	if err != nil {
		t.Fatalf("Batch: %v", err)
	}
	if res.OK != 18 || res.Wrong != 2 {
		t.Errorf("Batch(text) ok %d wrong %d, errors %v; want 18 ok, 2 wrong", res.OK, res.Wrong, res.Errors)
	}
}

// TestBatchRetryHonoursRetryAfter: a POST turned away whole (429, 503)
// goes again after its Retry-After, not at once; one without the header
// goes again at once.
func TestBatchRetryHonoursRetryAfter(t *testing.T) {
	ps, sols := testPuzzles(t)
	for _, tc := range []struct {
		status     int
		retryAfter string
		want       []time.Duration
	}{
		{429, "3", []time.Duration{3 * time.Second}},
		{503, "2", []time.Duration{2 * time.Second}},
		{503, "", nil},
		{503, "3600", []time.Duration{maxRetryAfter}},
	} {
		t.Run(fmt.Sprint(tc.status, " Retry-After ", tc.retryAfter), func(t *testing.T) {
			first := true
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if first {
					first = false
					if tc.retryAfter != "" {
						w.Header().Set("Retry-After", tc.retryAfter)
					}
					w.WriteHeader(tc.status)
					return
				}
				sc := bufio.NewScanner(r.Body)
				for sc.Scan() {
					id, cells, _ := solver.SplitLine(sc.Text())
					fmt.Fprintf(w, "%s:%s\n", id, sols[cells])
				}
			}))
			t.Cleanup(srv.Close)
			c := newClient(t, srv.URL, 1, 5*time.Second, false)
			var waited []time.Duration
			c.sleep = func(_ context.Context, d time.Duration) { waited = append(waited, d) }
			res, err := Batch(context.Background(), BatchConfig{Client: c, Puzzles: ps[:4], Target: srv.URL, Conns: 1, Size: 4, Retry: 1})
			if err != nil {
				t.Fatalf("Batch: %v", err)
			}
			if res.OK != 4 || res.Resent != 4 || !slices.Equal(waited, tc.want) {
				t.Errorf("Batch after a %d with Retry-After %q: ok %d resent %d, waited %v; want 4 ok, 4 resent, waited %v",
					tc.status, tc.retryAfter, res.OK, res.Resent, waited, tc.want)
			}
		})
	}
}
