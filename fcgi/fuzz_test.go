package fcgi

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func FuzzHandler(f *testing.F) {
	for _, seed := range []struct{ method, query, body string }{
		{"GET", "puzzle=" + easy, ""},
		{"GET", "puzzle=" + easy + "&id=x&unique=1&format=text", ""},
		{"GET", "puzzle=%zz&id=%ff", ""},
		{"GET", "puzzle=" + dead, ""},
		{"GET", "id=a&&&puzzle=1+2&puzzle=3", ""},
		{"POST", "", "a:" + easy + "\nb:" + dead + "\n\n#x\nc:1\n"},
		{"POST", "", "\xff:" + easy},
		{"PUT", "puzzle=1", "x"},
		{"HEAD", "puzzle=" + easy + "&format=TEXT&unique=Yes", ""},
		{"POST", "unique=1", "a:" + easy + "\n"},
	} {
		f.Add(seed.method, seed.query, seed.body)
	}
	s := New(cfg(func(c *Config) {
		c.WorkerID = "fuzz"
		c.SolveTimeout = 50 * time.Millisecond
		c.MaxBatchLines = 20
		c.MaxBodyBytes = 4096
	}), nopLog)
	f.Fuzz(func(t *testing.T, method, query, body string) {
		switch method {
		case "GET", "POST", "PUT", "HEAD", "DELETE":
		default:
			method = "GET"
		}
		r := httptest.NewRequest(method, "/sudoku", strings.NewReader(body))
		r.URL.RawQuery = query
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		switch w.Code {
		case 200, 400, 405, 413, 422, 503:
		default:
			t.Fatalf("%s ?%q body %q: status %d %q", method, query, body, w.Code, w.Body)
		}
		if w.Header().Get("X-Sudoku-Worker") != "fuzz" {
			t.Fatalf("no X-Sudoku-Worker header")
		}
		if method == "HEAD" && w.Body.Len() != 0 {
			t.Fatalf("HEAD ?%q: body %q, want none", query, w.Body)
		}
		if method != "HEAD" && w.Header().Get("Content-Type") == "application/json" && !json.Valid(w.Body.Bytes()) {
			t.Fatalf("%s ?%q: invalid JSON %q", method, query, w.Body)
		}
		if method == "POST" && w.Code == 200 {
			// one answer line per puzzle line, never more
			if n, max := bytes.Count(w.Body.Bytes(), []byte("\n")), strings.Count(body, "\n")+1; n > max {
				t.Fatalf("batch answered %d lines for at most %d", n, max)
			}
		}
	})
}

func FuzzParseQuery(f *testing.F) {
	f.Add("puzzle=1&id=2&unique=1&format=text")
	f.Add("puzzle=%41%zz")
	f.Add("a=b&&=&puzzle")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := parseQuery(raw)
		if err != nil {
			return
		}
		// Values without escapes come back verbatim.
		if !strings.ContainsAny(raw, "%+") && strings.HasPrefix(raw, "puzzle=") {
			v, _, _ := strings.Cut(strings.TrimPrefix(raw, "puzzle="), "&")
			if q.puzzle != v || !q.hasPuzzle {
				t.Fatalf("parseQuery(%q).puzzle = %q, want %q", raw, q.puzzle, v)
			}
		}
	})
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add("plain")
	f.Add("q\"\\\n\x00<>&\xff\u2028")
	f.Fuzz(func(t *testing.T, s string) {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("appendJSONString(%q) = %q: %v", s, b, err)
		}
		if got != string([]rune(s)) { // each invalid byte becomes U+FFFD
			t.Fatalf("round trip of %q = %q", s, got)
		}
	})
}
