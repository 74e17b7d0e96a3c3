package load

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"
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
