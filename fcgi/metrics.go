package fcgi

import (
	"github.com/prometheus/client_golang/prometheus"
)

const namespace = "sudoku"

// metrics are the service's Prometheus collectors; the Service collects
// them.
type metrics struct {
	requests       *prometheus.CounterVec
	lines          *prometheus.CounterVec
	requestSeconds prometheus.Histogram
	solveSeconds   prometheus.Histogram
	queueSeconds   prometheus.Histogram
	inFlight       prometheus.Gauge
	panics         prometheus.Counter

	// Children resolved once, so the hot path does no label lookups.
	byOutcome     [numRoutes][numOutcomes]prometheus.Counter
	linesByResult [numOutcomes]prometheus.Counter
}

// latency buckets: 50 us to ~3.3 s.
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 17)

func newMetrics() *metrics {
	counters := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help})
	}
	latency := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: latencyBuckets})
	}
	m := &metrics{
		requests: counters("requests_total",
			"Requests answered by the public handler, by route (get, batch, stats, other) and outcome (ok for an answered batch or stats request).",
			"route", "outcome"),
		lines:          counters("batch_lines_total", "Puzzles answered in POST batches, by outcome.", "outcome"),
		requestSeconds: latency("request_duration_seconds", "Time from the handler's start to its last byte, including queue wait."),
		solveSeconds:   latency("solve_duration_seconds", "Time spent in the solver per puzzle."),
		queueSeconds:   latency("queue_wait_seconds", "Time a puzzle waited for a solver slot (0 when one was free)."),
		inFlight:       gauge("requests_in_flight", "Requests inside the public handler now."),
		panics:         counter("handler_panics_total", "Panics recovered in the handler (answered 500)."),
	}
	for o := outcome(0); o < numOutcomes; o++ {
		for r := route(0); r < numRoutes; r++ {
			m.byOutcome[r][o] = m.requests.WithLabelValues(routeNames[r], o.metricOutcome())
		}
		m.linesByResult[o] = m.lines.WithLabelValues(o.String())
	}
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		m.requests, m.lines, m.requestSeconds, m.solveSeconds, m.queueSeconds, m.inFlight, m.panics,
	}
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
