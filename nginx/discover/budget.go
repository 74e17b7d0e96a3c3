package discover

import "time"

// Budget is how many workers' share of requests nginx admits at once (see
// conf.RenderUpstream). It is the most workers seen, so that while some are
// missing (a restart, a crash) the others take their share. Once fewer have
// answered for Hold, the missing ones count as gone (a scale-down, a worker
// that never came back) and the budget falls to the workers there are.
// The zero Hold never lets the budget fall.
type Budget struct {
	Hold time.Duration

	most  int
	short time.Time // since when fewer than most have answered; zero if none missing
}

// Update records that n workers answer at now and returns the budget.
func (b *Budget) Update(n int, now time.Time) int {
	switch {
	case n >= b.most, b.Expired(n, now):
		b.most, b.short = n, time.Time{}
	case b.short.IsZero():
		b.short = now
	}
	return b.most
}

// Expired reports whether Update(n, now) would lower the budget: fewer
// than the budget have answered for Hold or longer.
func (b *Budget) Expired(n int, now time.Time) bool {
	return n < b.most && !b.short.IsZero() && b.Hold > 0 && now.Sub(b.short) >= b.Hold
}
