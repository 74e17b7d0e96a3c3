package fcgi

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// ErrBusy is returned by Pool.Acquire when no slot frees up in time, or the
// queue is already full.
var ErrBusy = errors.New("fcgi: solver pool busy")

// Pool bounds how many solves run at once. Callers beyond the slots wait in
// a small bounded queue, each for at most the queue timeout; a caller that
// finds the queue full, or whose wait runs out, gets ErrBusy at once and
// never runs. It is safe for concurrent use.
type Pool struct {
	slots   chan struct{}
	queue   int64
	timeout time.Duration
	waiting atomic.Int64
}

// NewPool returns a pool of size slots (at least 1) with a queue of up to
// queue waiters (0: no waiting), each waiting at most timeout.
func NewPool(size, queue int, timeout time.Duration) *Pool {
	if size < 1 {
		size = 1
	}
	if queue < 0 {
		queue = 0
	}
	return &Pool{slots: make(chan struct{}, size), queue: int64(queue), timeout: timeout}
}

// Acquire takes a slot, waiting in the queue if needed. It reports how long
// it waited. It returns ctx.Err() without a slot when ctx has already ended
// or ends while waiting. On success the caller must call Release once.
func (p *Pool) Acquire(ctx context.Context) (time.Duration, error) {
	// A caller whose work was cancelled (a batch whose client left) must
	// not take a slot even when one is free.
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	select {
	case p.slots <- struct{}{}:
		return 0, nil
	default:
	}
	if p.waiting.Add(1) > p.queue {
		p.waiting.Add(-1)
		return 0, ErrBusy
	}
	defer p.waiting.Add(-1)
	start := time.Now()
	t := time.NewTimer(p.timeout)
	defer t.Stop()
	select {
	case p.slots <- struct{}{}:
		return time.Since(start), nil
	case <-t.C:
		return time.Since(start), ErrBusy
	case <-ctx.Done():
		return time.Since(start), ctx.Err()
	}
}

// Release frees a slot taken by Acquire.
func (p *Pool) Release() { <-p.slots }

// Size is the number of slots.
func (p *Pool) Size() int { return cap(p.slots) }

// QueueCap is the most callers that may wait.
func (p *Pool) QueueCap() int { return int(p.queue) }

// Busy is the number of slots in use.
func (p *Pool) Busy() int { return len(p.slots) }

// Waiting is the number of callers in the queue.
func (p *Pool) Waiting() int { return int(p.waiting.Load()) }
