package nginx

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts what a Supervisor does. A nil *Metrics counts nothing.
type Metrics struct {
	set             *metricSet
	rounds          prometheus.Counter
	lookupErrors    prometheus.Counter
	workers         prometheus.Gauge
	budget          prometheus.Gauge
	configApplies   *prometheus.CounterVec
	certExpiry      *prometheus.GaugeVec
	certPlaceholder *prometheus.GaugeVec
	certFailures    prometheus.Counter
	restarts        prometheus.Counter
	responses       *prometheus.CounterVec
	accessLogErrors prometheus.Counter
	truncated       prometheus.Counter
	limited         *prometheus.CounterVec
	requestSeconds  *prometheus.HistogramVec
}

// NewMetrics returns unregistered metrics in the sudoku_edge namespace.
func NewMetrics() *Metrics {
	s := new(metricSet)
	m := &Metrics{
		set: s,
		rounds: s.Counter("discovery_rounds_total",
			"Worker lookups, the one before nginx starts included."),
		lookupErrors: s.Counter("discovery_errors_total",
			"Worker lookups that failed; the upstream kept its servers."),
		workers: s.Gauge("workers", "Worker addresses in nginx's upstream."),
		budget: s.Gauge("worker_budget",
			"Workers whose share of requests nginx admits (the most seen within the hold)."),
		configApplies: s.CounterVec("nginx_reloads_total",
			"Changed configurations by outcome: reloaded, rejected by nginx -t (old files kept), failed.", "outcome"),
		certExpiry: s.GaugeVec("certificate_expiry_timestamp_seconds",
			"When the certificate nginx serves for a TLS domain expires (Unix time); 0 while it serves the self-signed placeholder, which no client trusts.", "domain"),
		certPlaceholder: s.GaugeVec("certificate_placeholder",
			"1 while nginx serves the self-signed placeholder for a TLS domain (no certificate issued yet), else 0.", "domain"),
		certFailures: s.Counter("certificate_failures_total",
			"Certificate orders and renewals that failed (certmagic retries them)."),
		restarts: s.Counter("nginx_restarts_total",
			"nginx masters that exited on their own and were started again (the listening sockets stayed open)."),
		responses: s.CounterVec("nginx_responses_total",
			"Answers by status code and source, from nginx's access log: 429, 503 and under 400 from one request in "+strconv.Itoa(SampleEvery)+" (x"+strconv.Itoa(SampleEvery)+"), the other codes of 400 and up exactly (every answer exactly with -access-log-all); source nginx when it answered itself (its limits, its errors, no worker reached), worker otherwise.", "code", "source"),
		accessLogErrors: s.Counter("access_log_errors_total", "Access log lines the edge could not read."),
		limited: s.CounterVec("nginx_limited_total",
			"Requests nginx turned away at a limit_req or limit_conn zone: the sudoku_req, sudoku_batch and sudoku_client_* zones are a client over its own limits (429), the others a full service (503); from nginx's error log.", "zone"),
		requestSeconds: s.HistogramVec("nginx_request_duration_seconds",
			"nginx's time for a request, from its first byte to the answer's last ($request_time), by source as in nginx_responses_total, of the requests in the access log's sample (one in "+strconv.Itoa(SampleEvery)+"; every request with -access-log-all): the latency clients see, but for the network.", "source"),
		truncated: s.Counter("nginx_truncated_answers_total",
			"Answers nginx cut short, without their last chunk, because the worker closed the connection in the middle (a batch whose worker died); from nginx's error log."),
	}
	for _, o := range []applyOutcome{reloaded, rejected, failed} {
		m.configApplies.WithLabelValues(o.String())
	}
	return m
}

// Register registers every metric with r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	var errs []error
	for _, c := range m.set.all {
		errs = append(errs, r.Register(c))
	}
	return errors.Join(errs...)
}

// metricSet makes metrics named sudoku_edge_<name> and keeps each one it
// made for Register. The zero metricSet is ready to use.
type metricSet struct {
	all []prometheus.Collector
}

func edgeOpts(name, help string) prometheus.Opts {
	return prometheus.Opts{Namespace: "sudoku", Subsystem: "edge", Name: name, Help: help}
}

func keep[C prometheus.Collector](s *metricSet, c C) C {
	s.all = append(s.all, c)
	return c
}

func (s *metricSet) Gauge(name, help string) prometheus.Gauge {
	return keep(s, prometheus.NewGauge(prometheus.GaugeOpts(edgeOpts(name, help))))
}

func (s *metricSet) Counter(name, help string) prometheus.Counter {
	return keep(s, prometheus.NewCounter(prometheus.CounterOpts(edgeOpts(name, help))))
}

func (s *metricSet) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return keep(s, prometheus.NewGaugeVec(prometheus.GaugeOpts(edgeOpts(name, help)), labels))
}

// requestBuckets span nginx's own 503 (under 1 ms) to the batch read
// timeout (35 s).
var requestBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 40}

func (s *metricSet) HistogramVec(name, help string, labels ...string) *prometheus.HistogramVec {
	o := edgeOpts(name, help)
	return keep(s, prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: o.Namespace, Subsystem: o.Subsystem, Name: o.Name, Help: o.Help, Buckets: requestBuckets}, labels))
}

func (s *metricSet) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return keep(s, prometheus.NewCounterVec(prometheus.CounterOpts(edgeOpts(name, help)), labels))
}

func (m *Metrics) round(err error) {
	if m == nil {
		return
	}
	m.rounds.Inc()
	if err != nil {
		m.lookupErrors.Inc()
	}
}

func (m *Metrics) workersNow(workers, budget int) {
	if m == nil {
		return
	}
	m.workers.Set(float64(workers))
	m.budget.Set(float64(budget))
}

func (m *Metrics) applied(o applyOutcome) {
	if m == nil || o == unchanged {
		return
	}
	m.configApplies.WithLabelValues(o.String()).Inc()
}

// certLive reports the pair nginx reads for domain. A placeholder's
// expiry is reported as 0: clients do not trust it, so it is as good as
// expired, and an expiry alert fires at once rather than in ~76 days.
func (m *Metrics) certLive(domain string, notAfter time.Time, placeholder bool) {
	if m == nil {
		return
	}
	expiry, isPlaceholder := float64(notAfter.Unix()), 0.0
	if placeholder {
		expiry, isPlaceholder = 0, 1
	}
	m.certExpiry.WithLabelValues(domain).Set(expiry)
	m.certPlaceholder.WithLabelValues(domain).Set(isPlaceholder)
}

// certFailuresCounter is the counter for certOptions.Failures; nil
// without metrics.
func (m *Metrics) certFailuresCounter() prometheus.Counter {
	if m == nil {
		return nil
	}
	return m.certFailures
}

func (m *Metrics) restarted() {
	if m == nil {
		return
	}
	m.restarts.Inc()
}

func (m *Metrics) response(code []byte, source string, weight float64) {
	if m == nil {
		return
	}
	m.responses.WithLabelValues(string(code), source).Add(weight)
}

func (m *Metrics) requestTime(source string, seconds float64) {
	if m == nil {
		return
	}
	m.requestSeconds.WithLabelValues(source).Observe(seconds)
}

func (m *Metrics) accessLogError() {
	if m == nil {
		return
	}
	m.accessLogErrors.Inc()
}

// truncatedAnswer counts one answer nginx cut short; a nil *Metrics
// counts nothing.
func (m *Metrics) truncatedAnswer() {
	if m == nil {
		return
	}
	m.truncated.Inc()
}

// limitedAt counts one request turned away at zone; a nil *Metrics counts
// nothing.
func (m *Metrics) limitedAt(zone string) {
	if m == nil {
		return
	}
	m.limited.WithLabelValues(zone).Inc()
}
