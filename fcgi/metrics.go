package fcgi

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

const namespace = "sudoku"

// Metrics are the worker's Prometheus collectors. Build them with
// NewMetrics and register them with Register; nothing is global.
type Metrics struct {
	requests       *prometheus.CounterVec
	lines          *prometheus.CounterVec
	requestSeconds prometheus.Histogram
	solveSeconds   prometheus.Histogram
	queueSeconds   prometheus.Histogram
	inFlight       prometheus.Gauge
	conns          prometheus.Gauge
	connsTotal     prometheus.Counter
	connsClosed    *prometheus.CounterVec
	malformed      prometheus.Counter
	panics         prometheus.Counter

	// Children resolved once, so the hot path does no label lookups.
	byOutcome     [numRoutes][numOutcomes]prometheus.Counter
	linesByResult [numOutcomes]prometheus.Counter
	closedLimit   prometheus.Counter
	closedPeer    prometheus.Counter
	closedDrain   prometheus.Counter
}

// latency buckets: 50 us to ~3.3 s.
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 17)

// NewMetrics builds the collectors.
func NewMetrics() *Metrics {
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
	m := &Metrics{
		requests: counters("requests_total",
			"Requests answered by the public handler, by route (get, batch, stats, other) and outcome (ok for an answered batch or stats request).",
			"route", "outcome"),
		lines:          counters("batch_lines_total", "Puzzles answered in POST batches, by outcome.", "outcome"),
		requestSeconds: latency("request_duration_seconds", "Time from the handler's start to its last byte, including queue wait."),
		solveSeconds:   latency("solve_duration_seconds", "Time spent in the solver per puzzle."),
		queueSeconds:   latency("queue_wait_seconds", "Time a puzzle waited for a solver slot (0 when one was free)."),
		inFlight:       gauge("requests_in_flight", "Requests inside the public handler now."),
		conns:          gauge("fastcgi_connections", "Open FastCGI connections."),
		connsTotal:     counter("fastcgi_connections_accepted_total", "FastCGI connections accepted."),
		connsClosed: counters("fastcgi_connections_closed_by_worker_total",
			"FastCGI connections the worker closed itself, by reason (limit: per-connection record bounds; drain: shutdown; peer_limit: over -max-conns-per-peer from one address or user).",
			"reason"),
		malformed: counter("fastcgi_malformed_requests_total",
			"Requests net/http/fcgi could not turn into an http.Request (bad Host, URI, length), answered 400."),
		panics: counter("handler_panics_total", "Panics recovered in the handler (answered 500)."),
	}
	for o := outcome(0); o < numOutcomes; o++ {
		for r := route(0); r < numRoutes; r++ {
			m.byOutcome[r][o] = m.requests.WithLabelValues(routeNames[r], o.metricOutcome())
		}
		m.linesByResult[o] = m.lines.WithLabelValues(o.String())
	}
	m.closedLimit = m.connsClosed.WithLabelValues("limit")
	m.closedDrain = m.connsClosed.WithLabelValues("drain")
	m.closedPeer = m.connsClosed.WithLabelValues("peer_limit")
	return m
}

// Register registers every collector with r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	var errs []error
	for _, c := range []prometheus.Collector{
		m.requests, m.lines, m.requestSeconds, m.solveSeconds, m.queueSeconds,
		m.inFlight, m.conns, m.connsTotal, m.connsClosed, m.malformed, m.panics,
	} {
		if err := r.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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

var _ ConnCounter = (*Service)(nil)

// ConnOpened counts an open FastCGI connection; the Service is Serve's
// Conns option.
func (s *Service) ConnOpened() {
	s.conns.Add(1)
	s.m.conns.Inc()
	s.m.connsTotal.Inc()
}

// ConnClosed counts a FastCGI connection's end, by who closed it and why.
func (s *Service) ConnClosed(why CloseReason) {
	switch why {
	case CloseRefused:
		s.m.closedPeer.Inc()
		return // never counted open
	case CloseLimit:
		s.m.closedLimit.Inc()
	case CloseDrain:
		s.m.closedDrain.Inc()
	}
	s.conns.Add(-1)
	s.m.conns.Dec()
}
