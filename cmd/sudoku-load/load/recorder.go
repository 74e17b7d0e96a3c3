package load

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds, from 1 us to 10 minutes, with 3
// significant digits.
const (
	histMin    = 1
	histMax    = int64(10 * time.Minute / time.Microsecond)
	histDigits = 3
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histDigits) }

// Tick is one second of a run, as shown in the progress line and the
// latency-over-time plot.
type Tick struct {
	// Second is the time since the start of the run, in whole seconds.
	Second int `json:"second"`
	// Sent and Received count requests in this second.
	Sent     int64 `json:"sent"`
	Received int64 `json:"received"`
	// InFlight is sent minus finished at the end of the second.
	InFlight int64 `json:"in_flight"`
	// Backlog counts requests that were due but not yet sent (all
	// connections busy), at the end of the second.
	Backlog int64 `json:"backlog"`
	// Busy counts 503s in this second; Errors counts all errors, Busy and
	// wrong answers included.
	Busy   int64 `json:"busy"`
	Errors int64 `json:"errors"`
	// Latency percentiles of the answers received in this second.
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// LagP99ms is the p99 of this process's own sending delay in this
	// second (load only; see Result.ScheduleLag).
	LagP99ms float64 `json:"lag_p99_ms"`
}

// recorder collects outcomes and latencies. It is safe for concurrent use.
type recorder struct {
	start time.Time

	due      atomic.Int64 // requests whose send time has come
	sent     atomic.Int64
	finished atomic.Int64
	unsent   atomic.Int64 // due but never sent: the run ended first
	resent   atomic.Int64 // requests or batch lines sent again (Retry)

	mu          sync.Mutex
	all         *hdrhistogram.Histogram
	sec         *hdrhistogram.Histogram
	lagAll      *hdrhistogram.Histogram // nil until Late is called
	lagSec      *hdrhistogram.Histogram
	received    int64
	kinds       [numKinds]int64
	resentAfter [numKinds]int64 // what the resent ones got before
	failed      *Span           // when the first and the last failure finished
	tick        Tick            // counts for the current second
	timeline    []Tick
}

// newRecorder starts a recorder whose seconds count from start.
func newRecorder(start time.Time) *recorder {
	return &recorder{start: start, all: newHist(), sec: newHist()}
}

// Due notes that a request's scheduled send time has come.
func (r *recorder) Due() { r.due.Add(1) }

// Late records how late this process handed a request on after it was due.
func (r *recorder) Late(d time.Duration) {
	us := max(histMin, min(histMax, d.Microseconds()))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lagAll == nil {
		r.lagAll, r.lagSec = newHist(), newHist()
	}
	_ = r.lagAll.RecordValue(us) // cannot fail: clamped to the range
	_ = r.lagSec.RecordValue(us)
}

// Sent notes that a request went out.
func (r *recorder) Sent() {
	r.sent.Add(1)
	r.mu.Lock()
	r.tick.Sent++
	r.mu.Unlock()
}

// Done records a finished request: its kind and, when received is true (an
// answer of any status arrived), its latency.
func (r *recorder) Done(k Kind, received bool, latency time.Duration) {
	us := latency.Microseconds()
	us = max(histMin, min(histMax, us))
	r.finished.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kinds[k]++
	if received {
		r.received++
		r.tick.Received++
		_ = r.all.RecordValue(us) // cannot fail: clamped to the range
		_ = r.sec.RecordValue(us)
	}
	if k == KindBusy {
		r.tick.Busy++
	}
	if k != KindOK {
		r.tick.Errors++
		r.fail(time.Since(r.start))
	}
}

// fail notes a failure that finished at, since the start. The caller holds
// mu.
func (r *recorder) fail(at time.Duration) {
	ms := float64(at.Microseconds()) / 1000
	if r.failed == nil {
		r.failed = &Span{FirstMs: ms}
	}
	r.failed.LastMs = max(r.failed.LastMs, ms)
}

// Unsent records a request that was due but never sent because the run
// ended first (all connections stayed busy). It counts as a timeout.
func (r *recorder) Unsent() {
	r.unsent.Add(1)
	r.mu.Lock()
	r.kinds[KindTimeout]++
	r.tick.Errors++
	r.fail(time.Since(r.start))
	r.mu.Unlock()
}

// Tick closes the current second and returns it. Call it once a second.
func (r *recorder) Tick() Tick {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.tick
	t.Second = len(r.timeline) + 1
	t.InFlight = r.sent.Load() - r.finished.Load()
	if b := r.due.Load() - r.sent.Load() - r.unsent.Load(); b > 0 {
		t.Backlog = b
	}
	t.P50ms = usToMs(quantile(r.sec, 50))
	t.P99ms = usToMs(quantile(r.sec, 99))
	t.MaxMs = usToMs(r.sec.Max())
	r.sec.Reset()
	if r.lagSec != nil {
		t.LagP99ms = usToMs(quantile(r.lagSec, 99))
		r.lagSec.Reset()
	}
	r.tick = Tick{}
	r.timeline = append(r.timeline, t)
	return t
}

func usToMs(us int64) float64 { return float64(us) / 1000 }

func (r *recorder) ticks() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.timeline)
}

// Resent notes a request or batch line sent again after it got k (a busy
// answer, or none); each still counts once as sent.
func (r *recorder) Resent(k Kind) {
	r.resent.Add(1)
	r.mu.Lock()
	r.resentAfter[k]++
	r.mu.Unlock()
}

// Fill copies the totals, latency percentiles and timeline into res.
func (r *recorder) Fill(res *Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res.Sent = r.sent.Load()
	res.Resent = r.resent.Load()
	res.Received = r.received
	res.OK = r.kinds[KindOK]
	res.Wrong = r.kinds[KindWrong]
	res.Errors = make(map[string]int64, numKinds)
	for _, k := range errorKinds() {
		res.Errors[k.String()] = r.kinds[k]
	}
	if res.Resent > 0 {
		res.ResentAfter = make(map[string]int64)
		for _, k := range errorKinds() {
			if n := r.resentAfter[k]; n > 0 {
				res.ResentAfter[k.String()] = n
			}
		}
	}
	res.Latency = latencyOf(r.all)
	res.Percentiles = percentilesOf(r.all)
	res.Timeline = append([]Tick(nil), r.timeline...)
	if r.failed != nil {
		f := *r.failed
		res.Failed = &f
	}
	if r.lagAll != nil {
		l := latencyOf(r.lagAll)
		res.ScheduleLag = &l
	}
}

func latencyOf(h *hdrhistogram.Histogram) Latency {
	return Latency{
		P50:  usToMs(quantile(h, 50)),
		P90:  usToMs(quantile(h, 90)),
		P99:  usToMs(quantile(h, 99)),
		P999: usToMs(quantile(h, 99.9)),
		Max:  usToMs(h.Max()),
		Mean: float64(int64(h.Mean())) / 1000,
	}
}

// reportQuantiles are the points of the percentile plot.
var reportQuantiles = []float64{0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999, 100}

func percentilesOf(h *hdrhistogram.Histogram) []Percentile {
	ps := make([]Percentile, 0, len(reportQuantiles))
	if h.TotalCount() == 0 {
		return ps
	}
	for _, q := range reportQuantiles {
		ps = append(ps, Percentile{Quantile: q, Ms: usToMs(quantile(h, q))})
	}
	return ps
}

// PercentileOf returns the q-th percentile (0-100) of ds, computed as
// every figure of the engine is (quantile). It is 0 for no durations.
func PercentileOf(ds []time.Duration, q float64) time.Duration {
	us := make([]int64, len(ds))
	for i, d := range ds {
		us[i] = d.Microseconds()
	}
	return time.Duration(PercentileOfCounts(us, q)) * time.Microsecond
}

// PercentileOfCounts returns the q-th percentile (0-100) of vs, whole
// numbers from 1 to ten minutes in microseconds (others are clamped), as
// PercentileOf does. It is 0 for no values.
func PercentileOfCounts(vs []int64, q float64) int64 {
	if len(vs) == 0 {
		return 0
	}
	h := newHist()
	for _, v := range vs {
		_ = h.RecordValue(max(histMin, min(histMax, v))) // cannot fail: clamped
	}
	return quantile(h, q)
}

// quantile is the q-th percentile (0-100) of h to 3 significant digits,
// rounded down to the lowest value of its bucket, so that it never reads
// higher than the latencies it stands for and a threshold at a recorded
// figure holds. It is the one percentile computation of the engine.
func quantile(h *hdrhistogram.Histogram, q float64) int64 {
	v := h.ValueAtQuantile(q)
	// Buckets are aligned powers of two wide: find the width by doubling.
	k := int64(1)
	for k <= v && h.ValuesAreEquivalent(v, v-k) {
		k *= 2
	}
	return v - k + 1
}
