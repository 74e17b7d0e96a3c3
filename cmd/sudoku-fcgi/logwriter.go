package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// bufferedWriter batches log lines: one write(2) per flush interval (or
// when 32 KiB collect) instead of one per request. zerolog writes whole
// lines, so lines are never split.
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
