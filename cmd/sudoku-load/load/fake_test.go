package load

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// testPuzzles reads testdata/puzzles.txt and the solutions beside it.
func testPuzzles(t *testing.T) ([]Puzzle, map[string]string) {
	t.Helper()
	f, err := os.Open("testdata/puzzles.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ps, err := ReadPuzzles(f)
	if err != nil {
		t.Fatal(err)
	}
	sf, err := os.Open("testdata/solutions.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	sols := map[string]string{}
	sc := bufio.NewScanner(sf)
	for i := 0; sc.Scan(); i++ {
		sols[ps[i].Text] = sc.Text()
	}
	if len(sols) != len(ps) {
		t.Fatalf("%d solutions for %d puzzles", len(sols), len(ps))
	}
	return ps, sols
}

// fake is a stand-in for the worker API that answers from known solutions.
type fake struct {
	sols map[string]string
	// before runs first on every GET; it may sleep, or answer itself and
	// return true.
	before func(w http.ResponseWriter, r *http.Request) bool
	// mangle, if set, may change the solution of a puzzle before it is sent.
	mangle func(puzzle, sol string) string
	// closeEvery, if set, ends each connection after that many answers
	// with "Connection: close", as nginx does after keepalive_requests.
	closeEvery int

	mu    sync.Mutex
	count int
}

// connAnswers counts the requests served on one connection.
type connAnswers struct{ n int }

type connAnswersKey struct{}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.count++
	f.mu.Unlock()
	if ca, ok := r.Context().Value(connAnswersKey{}).(*connAnswers); ok && f.closeEvery > 0 {
		if ca.n++; ca.n%f.closeEvery == 0 {
			w.Header().Set("Connection", "close")
		}
	}
	if r.URL.Path != "/sudoku" {
		http.NotFound(w, r)
		return
	}
	if r.Method == http.MethodPost {
		f.batch(w, r)
		return
	}
	if f.before != nil && f.before(w, r) {
		return
	}
	q := r.URL.Query()
	id, p := q.Get("id"), q.Get("puzzle")
	sol, ok := f.sols[p]
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":"unknown puzzle","id":%q}`, id)
		return
	}
	if f.mangle != nil {
		sol = f.mangle(p, sol)
	}
	if q.Get("format") == "text" {
		fmt.Fprintf(w, "%s:%s\n", id, sol)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"id": id, "puzzle": p, "solution": sol})
}

// answered returns how many requests f has served.
func (f *fake) answered() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.count
}

// batch answers POST lines in reverse order, as the API allows any order.
func (f *fake) batch(w http.ResponseWriter, r *http.Request) {
	var out []string
	sc := bufio.NewScanner(r.Body)
	for sc.Scan() {
		id, p, _ := strings.Cut(sc.Text(), ":")
		sol, ok := f.sols[p]
		switch {
		case !ok:
			sol = "error: unknown puzzle"
		case f.mangle != nil:
			sol = f.mangle(p, sol)
		}
		out = append([]string{id + ":" + sol}, out...)
	}
	fmt.Fprintln(w, strings.Join(out, "\n"))
}

func newFake(t *testing.T, f *fake) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connAnswersKey{}, &connAnswers{})
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

func newClient(t *testing.T, url string, conns int, timeout time.Duration, text bool) *Client {
	t.Helper()
	c, err := NewClient(ClientConfig{URL: url, Conns: conns, Timeout: timeout, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestSolutionsFile(t *testing.T) {
	ps, sols := testPuzzles(t)
	for _, p := range ps {
		if err := verify(p.Grid, sols[p.Text]); err != nil {
			t.Errorf("puzzle %s: verify(solution) = %v", p.ID, err)
		}
	}
}
