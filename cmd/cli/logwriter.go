package cli

import (
	"bufio"
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog/diode"
)

// logSlots is how many writes a LogWriter queues while its output is
// stalled; past that it drops the oldest. Writes are log lines, or
// sudoku-edge's chunks of nginx's access log of at most 16 KiB, so a
// stalled output holds at most a few MiB.
const logSlots = 1024

// logCloseWait bounds how long the close of a LogWriter waits for a stalled
// output to take what is queued.
const logCloseWait = 2 * time.Second

// LogWriter returns the writer a process's logs go through to w, and a
// close that flushes it. Write never waits for w: it queues the write in
// a ring (zerolog's diode) that one goroutine drains into w, so an output
// that stalls (the container runtime's log reader, a full disk) costs log
// lines, never requests; dropped, when set, is told how many writes the
// ring lost. With flush > 0 the lines are batched into one write(2) to w
// every flush (or per 32 KiB). close waits at most logCloseWait.
func LogWriter(w io.Writer, flush time.Duration, dropped func(n int)) (out io.Writer, closeLog func()) {
	var down io.Writer = onlyWriter{w} // diode closes an io.Closer: never os.Stderr
	var batched *bufferedWriter
	if flush > 0 {
		batched = newBufferedWriter(w, flush)
		down = onlyWriter{batched}
	}
	d := diode.NewWriter(down, logSlots, 10*time.Millisecond, diode.Alerter(dropped))
	return d, func() {
		closed := make(chan struct{})
		go func() {
			d.Close()
			if batched != nil {
				batched.Close()
			}
			close(closed)
		}()
		select {
		case <-closed:
		case <-time.After(logCloseWait):
		}
	}
}

// onlyWriter hides every method of a writer but Write.
type onlyWriter struct{ io.Writer }

// bufferedWriter batches log lines: one write(2) per flush interval (or
// when 32 KiB collect) instead of one per line. Its writes come whole from
// the diode, so lines are never split.
type bufferedWriter struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

func newBufferedWriter(w io.Writer, every time.Duration) *bufferedWriter {
	b := &bufferedWriter{w: bufio.NewWriterSize(w, 32<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				b.mu.Lock()
				b.w.Flush()
				b.mu.Unlock()
			case <-b.stop:
				return
			}
		}
	}()
	return b
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Write(p)
}

// Close stops the flusher and flushes what is left.
func (b *bufferedWriter) Close() error {
	close(b.stop)
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Flush()
}
