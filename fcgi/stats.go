package fcgi

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// window is how many seconds of history /sudoku/stats reads.
const window = 60

// stats records each finished request once, in the request histogram
// (sudoku_request_duration_seconds), and keeps that histogram's counts as
// they stood at the start of each of the last seconds: the difference
// between two of them is the requests that ended in between, which gives
// the stats page its rates and quantiles over the last minute from the
// same record /metrics reads. It is safe for concurrent use.
type stats struct {
	start time.Time
	h     prometheus.Histogram

	last  atomic.Int64 // the second of the newest snapshot
	mu    sync.Mutex
	snaps [window + 4]countsAt // by second, modulo its length
}

// countsAt is the histogram as it stood when second unix began.
type countsAt struct {
	unix    int64
	count   uint64
	buckets []uint64 // cumulative, one per bound of latencyBuckets
}

// newStats starts the clock; h is the request histogram, with
// latencyBuckets.
func newStats(now time.Time, h prometheus.Histogram) *stats { return &stats{start: now, h: h} }

// record counts one finished request that ended at now after d.
func (s *stats) record(now time.Time, d time.Duration) {
	s.tick(now.Unix())
	s.h.Observe(d.Seconds())
}

// tick keeps the histogram's counts for second unix the first time a
// request ends in it, before that request is counted. A second no request
// ended in has the counts of the next one that has a snapshot: nothing
// changed in between.
func (s *stats) tick(unix int64) {
	if s.last.Load() >= unix {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last.Load() >= unix {
		return
	}
	var m dto.Metric
	if err := s.h.Write(&m); err != nil {
		return // a histogram's Write does not fail
	}
	h := m.GetHistogram()
	at := &s.snaps[unix%int64(len(s.snaps))]
	at.unix, at.count = unix, h.GetSampleCount()
	at.buckets = at.buckets[:0]
	for _, b := range h.GetBucket() {
		at.buckets = append(at.buckets, b.GetCumulativeCount())
	}
	s.last.Store(unix)
}

// at returns the counts as second unix began: those of the first snapshot
// at or after it (one after now too: a request that ended in a later
// second took it before any ended in this one); nil if there is none.
func (s *stats) at(unix int64) *countsAt {
	var best *countsAt
	for i := range s.snaps {
		c := &s.snaps[i]
		if c.unix >= unix && c.buckets != nil && (best == nil || c.unix < best.unix) {
			best = c
		}
	}
	return best
}

// snapshot is a summary of recent traffic.
type snapshot struct {
	RPS1, RPS10, RPS60     float64
	P50, P90, P99, P999    time.Duration
	Uptime                 time.Duration
	LatencySamples, Window int
}

// snapshot summarises the complete seconds before now: request rates over
// the last 1, 10 and 60 s and latency quantiles over the last 60 s.
func (s *stats) snapshot(now time.Time) snapshot {
	snap := snapshot{Uptime: now.Sub(s.start), Window: window}
	cur := now.Unix()
	s.tick(cur)
	s.mu.Lock()
	defer s.mu.Unlock()
	end := s.at(cur)
	if end == nil {
		return snap
	}
	since := func(seconds int64) uint64 {
		if c := s.at(cur - seconds); c != nil {
			return end.count - c.count
		}
		return 0
	}
	// Do not divide by seconds the process has not lived yet.
	up := int64(snap.Uptime / time.Second)
	rate := func(w int64) float64 {
		n := since(w)
		if up < w {
			w = max(up, 1)
		}
		return float64(n) / float64(w)
	}
	snap.RPS1, snap.RPS10, snap.RPS60 = rate(1), rate(10), rate(window)
	begin := s.at(cur - window)
	n := end.count - begin.count
	snap.LatencySamples = int(n)
	buckets := make([]uint64, len(end.buckets))
	for i := range buckets {
		buckets[i] = end.buckets[i] - begin.buckets[i]
	}
	snap.P50 = quantile(buckets, n, 0.50)
	snap.P90 = quantile(buckets, n, 0.90)
	snap.P99 = quantile(buckets, n, 0.99)
	snap.P999 = quantile(buckets, n, 0.999)
	return snap
}

// quantile estimates the q-quantile of n latencies from their cumulative
// counts per bound of latencyBuckets as Prometheus's histogram_quantile
// does: linearly within the bucket the rank falls in, from 0 for the
// first; the highest bound when it falls above it.
func quantile(cumulative []uint64, n uint64, q float64) time.Duration {
	if n == 0 {
		return 0
	}
	rank := q * float64(n)
	lower, below := 0.0, uint64(0)
	for i, c := range cumulative {
		upper := latencyBuckets[i]
		if float64(c) >= rank {
			in := float64(c - below)
			return seconds(lower + (upper-lower)*(rank-float64(below))/in)
		}
		lower, below = upper, c
	}
	return seconds(latencyBuckets[len(latencyBuckets)-1])
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
