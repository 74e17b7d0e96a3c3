package fcgi

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

const namespace = "sudoku"

// counts are the one record of what the service answered: /sudoku/stats
// and /metrics both read them, so the two never disagree.
type counts struct {
	inFlight atomic.Int64
	requests [numRoutes][numOutcomes]atomic.Uint64
	lines    [numOutcomes]atomic.Uint64
}

// batchLineOutcomes are the outcomes a batch line can have (classify of a
// bad line, a failed or refused solve, or a solution), in the order of the
// outcomes.
var batchLineOutcomes = []outcome{
	outcomeSolved, outcomeNoSolution, outcomeBadRequest, outcomeTooBusy, outcomeTimeout, outcomeInternalError,
}

// totals are the requests answered since start, by outcome, all routes
// together.
func (c *counts) totals() map[string]uint64 {
	m := make(map[string]uint64, numOutcomes)
	for o := range numOutcomes {
		var n uint64
		for r := range numRoutes {
			n += c.requests[r][o].Load()
		}
		m[o.String()] = n
	}
	return m
}

// batchLines are the batch lines answered since start, by outcome.
func (c *counts) batchLines() map[string]uint64 {
	m := make(map[string]uint64, len(batchLineOutcomes))
	for _, o := range batchLineOutcomes {
		m[o.String()] = c.lines[o].Load()
	}
	return m
}

// metrics are the service's Prometheus metrics: the latency histograms and
// the panics counter it keeps itself, the pool's gauges, and descriptions
// of what it reads at scrape time from counts.
type metrics struct {
	requestSeconds prometheus.Histogram
	solveSeconds   prometheus.Histogram
	queueSeconds   prometheus.Histogram
	panics         prometheus.Counter
	pool           []prometheus.Collector

	requests, lines, inFlight *prometheus.Desc
}

// latency buckets: 50 us to ~3.3 s.
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 17)

func newMetrics(p *pool, draining func() bool) *metrics {
	latency := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: latencyBuckets})
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
	}
	return &metrics{
		requestSeconds: latency("request_duration_seconds", "Time from the handler's start to its last byte, including queue wait."),
		solveSeconds:   latency("solve_duration_seconds", "Time spent in the solver per puzzle."),
		queueSeconds:   latency("queue_wait_seconds", "Time a puzzle waited for a solver slot (0 when one was free)."),
		panics: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "handler_panics_total",
			Help: "Panics recovered in the handler (answered 500)."}),
		pool: poolGauges(p, draining),
		requests: desc("requests_total",
			"Requests answered by the public handler, by route (get, batch, stats, other) and outcome (ok for an answered batch or stats request).",
			"route", "outcome"),
		lines:    desc("batch_lines_total", "Puzzles answered in POST batches, by outcome.", "outcome"),
		inFlight: desc("requests_in_flight", "Requests inside the public handler now."),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return append([]prometheus.Collector{m.requestSeconds, m.solveSeconds, m.queueSeconds, m.panics}, m.pool...)
}

func (m *metrics) describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
	ch <- m.requests
	ch <- m.lines
	ch <- m.inFlight
}

// collect sends the metrics, those of c read now.
func (m *metrics) collect(ch chan<- prometheus.Metric, c *counts) {
	for _, col := range m.collectors() {
		col.Collect(ch)
	}
	for r := range numRoutes {
		// A batch or stats request that was answered is "ok" here: sum
		// the outcomes that share a label.
		var byLabel [numOutcomes]uint64
		for o := range numOutcomes {
			byLabel[o.metricLabel()] += c.requests[r][o].Load()
		}
		for o := range numOutcomes {
			if o.metricLabel() == o {
				ch <- prometheus.MustNewConstMetric(m.requests, prometheus.CounterValue, float64(byLabel[o]), routeNames[r], o.metricOutcome())
			}
		}
	}
	for _, o := range batchLineOutcomes {
		ch <- prometheus.MustNewConstMetric(m.lines, prometheus.CounterValue, float64(c.lines[o].Load()), o.String())
	}
	ch <- prometheus.MustNewConstMetric(m.inFlight, prometheus.GaugeValue, float64(c.inFlight.Load()))
}

// poolGauges are the pool's live state and the draining flag, read at
// scrape time.
func poolGauges(p *pool, draining func() bool) []prometheus.Collector {
	g := func(name, help string, read func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, read)
	}
	return []prometheus.Collector{
		g("pool_slots", "Solver slots (pool size).", func() float64 { return float64(p.Size()) }),
		g("pool_queue_capacity", "Most puzzles that may wait for a slot.", func() float64 { return float64(p.QueueCap()) }),
		g("pool_slots_busy", "Solver slots in use now.", func() float64 { return float64(p.Busy()) }),
		g("pool_queue_depth", "Puzzles waiting for a slot now.", func() float64 { return float64(p.Waiting()) }),
		g("draining", "1 while the worker drains for shutdown.", func() float64 {
			if draining() {
				return 1
			}
			return 0
		}),
	}
}
