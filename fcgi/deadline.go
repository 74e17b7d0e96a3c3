package fcgi

import (
	"context"
	"sync"
	"time"
)

// deadlineCtx is a context.Context that ends at a deadline, like
// context.WithDeadline(context.Background(), d), but pooled: its channel
// and timer are reused while the timer has not fired, so a solve that ends
// in time allocates nothing. Values are not supported (it is only handed to
// the solver).
type deadlineCtx struct {
	deadline time.Time
	done     chan struct{}
	timer    *time.Timer
}

var _ context.Context = (*deadlineCtx)(nil)

var deadlineCtxs sync.Pool

// newDeadlineCtx returns a context ending at d. Hand it back with
// releaseDeadlineCtx once the callee has returned and kept no reference.
func newDeadlineCtx(d time.Time) *deadlineCtx {
	c, _ := deadlineCtxs.Get().(*deadlineCtx)
	if c == nil {
		c = &deadlineCtx{done: make(chan struct{})}
		done := c.done
		c.deadline = d
		c.timer = time.AfterFunc(time.Until(d), func() { close(done) })
		return c
	}
	c.deadline = d
	c.timer.Reset(time.Until(d))
	return c
}

// releaseDeadlineCtx stops the timer and pools c if the timer had not fired
// (its channel is still open); a fired one is left to the collector.
func releaseDeadlineCtx(c *deadlineCtx) {
	if c.timer.Stop() {
		deadlineCtxs.Put(c)
	}
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *deadlineCtx) Value(any) any               { return nil }
func (c *deadlineCtx) Done() <-chan struct{}       { return c.done }

func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
