package fcgi

import (
	"math/bits"
	"sync"
	"time"
)

// Latency histogram: 8 sub-buckets per power of two from 2^minShift ns
// (~1 us) up to 2^maxShift ns (~137 s); about 9% relative precision.
const (
	minShift   = 10
	maxShift   = 37
	subBits    = 3
	subBuckets = 1 << subBits
	numBuckets = (maxShift-minShift)*subBuckets + 1
	window     = 60 // seconds of history
)

func bucketOf(d time.Duration) int {
	ns := uint64(d)
	if ns < 1<<minShift {
		return 0
	}
	exp := bits.Len64(ns) - 1 // ns in [2^exp, 2^(exp+1))
	if exp >= maxShift {
		return numBuckets - 1
	}
	sub := int(ns>>(exp-subBits)) & (subBuckets - 1)
	return (exp-minShift)*subBuckets + sub
}

// bucketUpper is the upper bound of bucket i.
func bucketUpper(i int) time.Duration {
	if i >= numBuckets-1 {
		return time.Duration(1) << maxShift
	}
	exp := i/subBuckets + minShift
	sub := i % subBuckets
	return time.Duration(uint64(subBuckets+sub+1) << (exp - subBits))
}

type second struct {
	unix  int64
	count uint32
	hist  [numBuckets]uint32
}

// stats keeps per-second request counts and latency histograms for the
// last minute, for the stats page's rates and quantiles over that window
// (the Prometheus histograms count since start; Prometheus computes its
// windows from scrapes). It is safe for concurrent use.
type stats struct {
	start time.Time

	mu   sync.Mutex
	secs [window]second
}

// newStats starts the clock.
func newStats(now time.Time) *stats { return &stats{start: now} }

// record counts one finished request that ended at now after d.
func (s *stats) record(now time.Time, d time.Duration) {
	unix := now.Unix()
	b := bucketOf(d)
	s.mu.Lock()
	sec := &s.secs[unix%window]
	if sec.unix != unix {
		*sec = second{unix: unix}
	}
	sec.count++
	sec.hist[b]++
	s.mu.Unlock()
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
	var snap snapshot
	snap.Uptime = now.Sub(s.start)
	var hist [numBuckets]uint64
	var n1, n10, n60 uint64
	cur := now.Unix()
	s.mu.Lock()
	for i := range s.secs {
		sec := &s.secs[i]
		age := cur - sec.unix // 1 = the last complete second
		if age < 1 || age > window {
			continue
		}
		c := uint64(sec.count)
		if age <= 1 {
			n1 += c
		}
		if age <= 10 {
			n10 += c
		}
		n60 += c
		for b, v := range sec.hist {
			hist[b] += uint64(v)
		}
	}
	s.mu.Unlock()
	// Do not divide by seconds the process has not lived yet.
	up := int64(snap.Uptime / time.Second)
	div := func(n uint64, w int64) float64 {
		if up < w {
			w = max(up, 1)
		}
		return float64(n) / float64(w)
	}
	snap.RPS1, snap.RPS10, snap.RPS60 = div(n1, 1), div(n10, 10), div(n60, 60)
	snap.LatencySamples = int(n60)
	snap.Window = window
	snap.P50 = quantile(&hist, n60, 0.50)
	snap.P90 = quantile(&hist, n60, 0.90)
	snap.P99 = quantile(&hist, n60, 0.99)
	snap.P999 = quantile(&hist, n60, 0.999)
	return snap
}

func quantile(hist *[numBuckets]uint64, n uint64, q float64) time.Duration {
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, v := range hist {
		seen += v
		if seen >= rank {
			return bucketUpper(i)
		}
	}
	return bucketUpper(numBuckets - 1)
}
