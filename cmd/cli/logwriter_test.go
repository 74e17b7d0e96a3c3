package cli

import (
	"bytes"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stalledWriter blocks every Write until release is closed, as a container
// runtime that stopped reading a process's stdout does.
type stalledWriter struct {
	release chan struct{}
	mu      sync.Mutex
	got     bytes.Buffer
}

func (s *stalledWriter) Write(p []byte) (int, error) {
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got.Write(p)
}

// TestLogWriterNeverWaitsForAStalledOutput: with its output stalled, a
// LogWriter takes 10,000 lines at once, tells how many it dropped, and
// its close returns within its bound; lines it kept arrive whole.
func TestLogWriterNeverWaitsForAStalledOutput(t *testing.T) {
	for _, flush := range []time.Duration{0, 10 * time.Millisecond} {
		out := &stalledWriter{release: make(chan struct{})}
		var dropped atomic.Int64
		w, closeLog := LogWriter(out, flush, func(n int) { dropped.Add(int64(n)) })
		line := strings.Repeat("x", 100) + "\n"
		wrote := make(chan error, 1)
		go func() {
			for range 10000 {
				if _, err := w.Write([]byte(line)); err != nil {
					wrote <- err
					return
				}
			}
			wrote <- nil
		}()
		select { // a write that waits for the stalled output never returns
		case err := <-wrote:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("flush %v: 10,000 writes to a stalled output did not return: Write waits for it", flush)
		}
		close(out.release) // the output reads again: the ring drains, then reports its losses
		deadline := time.Now().Add(10 * time.Second)
		for dropped.Load() == 0 && time.Now().Before(deadline) {
			w.Write([]byte(line))
			time.Sleep(20 * time.Millisecond)
		}
		if dropped.Load() == 0 {
			t.Errorf("flush %v: no dropped writes reported after 10,000 lines into a ring of %d", flush, logSlots)
		}
		began := time.Now()
		closeLog()
		if d := time.Since(began); d > logCloseWait+10*time.Second {
			t.Errorf("flush %v: close took %v, want it bounded by %v", flush, d, logCloseWait)
		}
		out.mu.Lock()
		for _, l := range strings.SplitAfter(out.got.String(), "\n") {
			if l != "" && l != line {
				t.Fatalf("flush %v: a line arrived cut: %q", flush, l)
			}
		}
		out.mu.Unlock()
	}
}

// TestLogWriterCloseBoundedWhileStalled: close gives up on an output that
// never reads again instead of hanging the process's exit.
func TestLogWriterCloseBoundedWhileStalled(t *testing.T) {
	out := &stalledWriter{release: make(chan struct{})}
	defer close(out.release)
	w, closeLog := LogWriter(out, 0, nil)
	w.Write([]byte("a line\n"))
	began := time.Now()
	closeLog()
	if d := time.Since(began); d > logCloseWait+10*time.Second {
		t.Errorf("close took %v with a stalled output, want it bounded by %v", d, logCloseWait)
	}
}
