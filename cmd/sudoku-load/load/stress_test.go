package load

import (
	"context"
	"testing"
	"time"
)

func TestStress(t *testing.T) {
	ps, sols := testPuzzles(t)
	url := newFake(t, &fake{sols: sols, mangle: func(p, sol string) string {
		if p == ps[0].Text {
			return ps[1].Text // a wrong answer, every 20th request
		}
		return sol
	}})
	t.Run("read", func(t *testing.T) {
		res, err := Stress(context.Background(), StressConfig{URL: url, Puzzles: ps, Conns: 3, Count: 400, Duration: 5 * time.Second})
		if err != nil {
			t.Fatalf("Stress: %v", err)
		}
		if res.Sent != 400 || res.Received != 400 || res.OK != 380 || res.Wrong != 20 {
			t.Errorf("Stress sent %d received %d ok %d wrong %d errors %v; want 400, 400, 380, 20",
				res.Sent, res.Received, res.OK, res.Wrong, res.Errors)
		}
		if res.Stress == nil || res.Stress.ReceiveRate <= 0 {
			t.Errorf("stress stats = %+v, want a receive rate", res.Stress)
		}
	})
	t.Run("server closes", func(t *testing.T) {
		// Every connection ends after 7 answers, with dozens of requests
		// already written behind the last one: those are written again on
		// a new connection, and every request gets its answer.
		url := newFake(t, &fake{sols: sols, closeEvery: 7})
		res, err := Stress(context.Background(), StressConfig{URL: url, Puzzles: ps, Conns: 2, Count: 300, Duration: 5 * time.Second})
		if err != nil {
			t.Fatalf("Stress: %v", err)
		}
		var failed int64
		for _, n := range res.Errors {
			failed += n
		}
		if res.Sent != 300 || res.Received != 300 || res.OK != 300 || failed != 0 {
			t.Errorf("Stress sent %d received %d ok %d errors %v; want 300, 300, 300 and none",
				res.Sent, res.Received, res.OK, res.Errors)
		}
		if res.Stress.Resent == 0 {
			t.Errorf("Stress resent 0 requests, want those written after each closing answer")
		}
	})
	t.Run("no read", func(t *testing.T) {
		start := time.Now()
		res, err := Stress(context.Background(), StressConfig{URL: url, Puzzles: ps, Conns: 2, Count: 300, Duration: 500 * time.Millisecond, NoRead: true})
		if err != nil {
			t.Fatalf("Stress: %v", err)
		}
		// A client that never reads holds its connections to the end.
		if d := time.Since(start); d < 500*time.Millisecond {
			t.Errorf("Stress(no read) returned after %v, want its connections held for the 500ms duration", d)
		}
		if res.Sent != 300 || res.Received != 0 || !res.Stress.NoRead {
			t.Errorf("Stress(no read) sent %d received %d; want 300 and 0", res.Sent, res.Received)
		}
	})
	t.Run("bounded by time", func(t *testing.T) {
		start := time.Now()
		res, err := Stress(context.Background(), StressConfig{URL: url, Puzzles: ps, Conns: 2, Count: 1 << 30, Duration: 300 * time.Millisecond})
		if err != nil {
			t.Fatalf("Stress: %v", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("Stress took %v, want about 300ms", d)
		}
		if res.Sent == 0 || res.Sent >= 1<<30 {
			t.Errorf("Stress sent %d, want some", res.Sent)
		}
	})
}
