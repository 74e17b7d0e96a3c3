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
// the panics counter it keeps itself, and descriptions of what it reads
// at scrape time from counts and the pool.
type metrics struct {
	requestSeconds prometheus.Histogram
	solveSeconds   prometheus.Histogram
	queueSeconds   prometheus.Histogram
	panics         prometheus.Counter

	requests, lines, inFlight *prometheus.Desc
}

// latency buckets: 50 us to ~3.3 s.
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 17)

func newMetrics() *metrics {
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
		requests: desc("requests_total",
			"Requests answered by the public handler, by route (get, batch, stats, other) and outcome (ok for an answered batch or stats request).",
			"route", "outcome"),
		lines:    desc("batch_lines_total", "Puzzles answered in POST batches, by outcome.", "outcome"),
		inFlight: desc("requests_in_flight", "Requests inside the public handler now."),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requestSeconds, m.solveSeconds, m.queueSeconds, m.panics}
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

// poolCollector exposes the pool's live state as gauges read at scrape time.
type poolCollector struct {
	pool                       *pool
	size, queueCap, busy, wait *prometheus.Desc
	draining                   *prometheus.Desc
	isDraining                 func() bool
}

func newPoolCollector(p *pool, draining func() bool) *poolCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, nil, nil)
	}
	return &poolCollector{
		pool:       p,
		size:       d("pool_slots", "Solver slots (pool size)."),
		queueCap:   d("pool_queue_capacity", "Most puzzles that may wait for a slot."),
		busy:       d("pool_slots_busy", "Solver slots in use now."),
		wait:       d("pool_queue_depth", "Puzzles waiting for a slot now."),
		draining:   d("draining", "1 while the worker drains for shutdown."),
		isDraining: draining,
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.size
	ch <- c.queueCap
	ch <- c.busy
	ch <- c.wait
	ch <- c.draining
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(c.pool.Size()))
	ch <- prometheus.MustNewConstMetric(c.queueCap, prometheus.GaugeValue, float64(c.pool.QueueCap()))
	ch <- prometheus.MustNewConstMetric(c.busy, prometheus.GaugeValue, float64(c.pool.Busy()))
	ch <- prometheus.MustNewConstMetric(c.wait, prometheus.GaugeValue, float64(c.pool.Waiting()))
	v := 0.0
	if c.isDraining() {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(c.draining, prometheus.GaugeValue, v)
}
