package fcgi

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// errBusy is returned by pool.acquire when the queue is full, when the
// caller's expected wait is too long, or when no slot frees up in time.
var errBusy = errors.New("fcgi: solver pool busy")

// pool bounds how many solves run at once. Callers beyond the slots wait in
// a bounded queue. A caller is refused at once (errBusy) when the queue is
// full or when its expected wait (the callers ahead of it times the recent
// interval between two slots freeing up while callers waited) is more than
// half the queue timeout; a caller admitted anyway waits at most the
// timeout. So a burst the pool can clear in time waits, and a steady excess
// is refused on arrival instead of after waiting. It is safe for
// concurrent use.
type pool struct {
	slots   chan struct{}
	queue   int64
	timeout time.Duration
	waiting atomic.Int64
	// lastFree is when a slot was last freed with callers waiting (Unix
	// nanoseconds; 0 when nobody was). interval is the moving average of
	// the time from one such release to the next, in nanoseconds: how fast
	// the queue moves, the solve and every cost around it (the Go
	// scheduler, the FastCGI side) included. Two releases at once may
	// lose one sample of the average, which is harmless and keeps release
	// free of locks.
	lastFree atomic.Int64
	interval atomic.Int64
}

// intervalWeight is the weight of the newest interval in the moving
// average (1/intervalWeight): a few dozen releases make it follow a change
// of load.
const intervalWeight = 16

// newPool returns a pool of size slots (at least 1) with a queue of up to
// queue waiters (0: no waiting), each waiting at most timeout.
func newPool(size, queue int, timeout time.Duration) *pool {
	if size < 1 {
		size = 1
	}
	if queue < 0 {
		queue = 0
	}
	return &pool{slots: make(chan struct{}, size), queue: int64(queue), timeout: timeout}
}

// acquire takes a slot, waiting in the queue if needed. It reports how long
// it waited. It returns ctx.Err() without a slot when ctx has already ended
// or ends while waiting. On success the caller must call release once.
func (p *pool) acquire(ctx context.Context) (time.Duration, error) {
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
	ahead := p.waiting.Add(1)
	if ahead > p.queue || p.expectedWait(ahead) > p.timeout/2 {
		p.waiting.Add(-1)
		return 0, errBusy
	}
	defer p.waiting.Add(-1)
	start := time.Now()
	t := time.NewTimer(p.timeout)
	defer t.Stop()
	select {
	case p.slots <- struct{}{}:
		return time.Since(start), nil
	case <-t.C:
		return time.Since(start), errBusy
	case <-ctx.Done():
		return time.Since(start), ctx.Err()
	}
}

// release frees a slot taken by acquire.
func (p *pool) release() {
	if p.waiting.Load() > 0 {
		now := time.Now().UnixNano()
		if last := p.lastFree.Swap(now); last != 0 {
			old := p.interval.Load()
			p.interval.Store(old + (now-last-old)/intervalWeight)
		}
	} else {
		p.lastFree.Store(0)
	}
	<-p.slots
}

// expectedWait is how long the n-th caller in the queue should wait for a
// slot, from the recent pace of the queue.
func (p *pool) expectedWait(n int64) time.Duration {
	return time.Duration(n * p.interval.Load())
}

// Size is the number of slots.
func (p *pool) Size() int { return cap(p.slots) }

// QueueCap is the most callers that may wait.
func (p *pool) QueueCap() int { return int(p.queue) }

// Busy is the number of slots in use.
func (p *pool) Busy() int { return len(p.slots) }

// Waiting is the number of callers in the queue.
func (p *pool) Waiting() int { return int(p.waiting.Load()) }
