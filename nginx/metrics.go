package nginx

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"sudoku-fcgi/nginx/internal/edgemetric"
)

// Metrics counts what a Supervisor does. A nil *Metrics counts nothing.
type Metrics struct {
	set             *edgemetric.Set
	rounds          prometheus.Counter
	lookupErrors    prometheus.Counter
	workers         prometheus.Gauge
	budget          prometheus.Gauge
	configApplies   *prometheus.CounterVec
	certExpiry      *prometheus.GaugeVec
	certPlaceholder *prometheus.GaugeVec
	certFailures    prometheus.Counter
	restarts        prometheus.Counter
	truncated       prometheus.Counter
	limited         *prometheus.CounterVec
}

// NewMetrics returns unregistered metrics in the sudoku_edge namespace.
func NewMetrics() *Metrics {
	s := new(edgemetric.Set)
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
		limited: s.CounterVec("nginx_limited_total",
			"Requests nginx turned away at a limit_req or limit_conn zone: the sudoku_req, sudoku_batch and sudoku_client_* zones are a client over its own limits (429), the others a full service (503); from nginx's error log.", "zone"),
		truncated: s.Counter("nginx_truncated_answers_total",
			"Answers nginx cut short, without their last chunk, because the worker closed the connection in the middle (a batch whose worker died); from nginx's error log."),
	}
	for _, o := range []applyOutcome{reloaded, rejected, failed} {
		m.configApplies.WithLabelValues(o.String())
	}
	return m
}

// Register registers every metric with r.
func (m *Metrics) Register(r prometheus.Registerer) error { return m.set.Register(r) }

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
