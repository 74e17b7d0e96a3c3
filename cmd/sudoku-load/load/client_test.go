package load

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestClientFailsOver checks that a client given several addresses sends a
// request that gets no answer from one (refused, or accepted and left
// silent) to the next, that the request is still answered, and that later
// requests go straight to the address that answered.
func TestClientFailsOver(t *testing.T) {
	ps, sols := testPuzzles(t)
	good := &fake{sols: sols}
	goodURL := newFake(t, good)

	// A port that refuses: listen, take the address, close.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String()
	l.Close()
	// A server that accepts and never answers, as a node cut off after
	// the connection was made.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	silentURL := "http://" + silent.Addr().String()

	for _, tc := range []struct {
		name  string
		first string
	}{{"refused", refused}, {"silent", silentURL}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, tc.first+","+goodURL, 4, 2*time.Second, false)
			before := good.answered()
			start := time.Now()
			out := c.Solve(context.Background(), ps[0])
			if out.Kind != KindOK {
				t.Fatalf("first request: %v (%v), want ok from the second address", out.Kind, out.Err)
			}
			if d := time.Since(start); d > 1500*time.Millisecond {
				t.Errorf("first request took %v, more than its attempt's share (1s) and the answer", d)
			}
			for _, p := range ps[1:5] {
				start := time.Now()
				if out := c.Solve(context.Background(), p); out.Kind != KindOK {
					t.Fatalf("later request: %v (%v)", out.Kind, out.Err)
				}
				if d := time.Since(start); d > 500*time.Millisecond {
					t.Errorf("a later request took %v: it tried the dead address again", d)
				}
			}
			if got := good.answered() - before; got != 5 {
				t.Errorf("the second address answered %d requests, want 5", got)
			}
		})
	}
}

// TestClientOneAddressDoesNotRetry checks that with one address a request
// that gets no answer fails once and is not resent.
func TestClientOneAddressDoesNotRetry(t *testing.T) {
	ps, sols := testPuzzles(t)
	var calls atomic.Int32
	f := &fake{sols: sols, before: func(w http.ResponseWriter, r *http.Request) bool {
		calls.Add(1)
		hj, _ := w.(http.Hijacker)
		c, _, _ := hj.Hijack()
		c.Close()
		return true
	}}
	c := newClient(t, newFake(t, f), 1, time.Second, false)
	out := c.Solve(context.Background(), ps[0])
	if out.Kind == KindOK || calls.Load() != 1 {
		t.Errorf("outcome %v after %d calls, want a failure after 1", out.Kind, calls.Load())
	}
}

func TestClientBadURLInList(t *testing.T) {
	_, err := NewClient(ClientConfig{URL: "http://127.0.0.1:1,ftp://x"})
	if err == nil || !strings.Contains(err.Error(), `"ftp://x"`) {
		t.Errorf("err = %v, want one naming the bad URL", err)
	}
}
