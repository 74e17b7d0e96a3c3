package nginx

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"sudoku-fcgi/nginx/edgetls"
	"sudoku-fcgi/nginx/logs"
	"sudoku-fcgi/nginx/proc"
)

// Metrics counts what a Supervisor does: its discovery rounds, reloads
// and restarts, and, through the rooms that count them, nginx's answers
// (logs.Metrics) and the certificates (edgetls.Metrics). It is a
// prometheus.Collector; a nil *Metrics counts nothing.
type Metrics struct {
	rounds        prometheus.Counter
	lookupErrors  prometheus.Counter
	workers       prometheus.Gauge
	budget        prometheus.Gauge
	configApplies *prometheus.CounterVec
	restarts      prometheus.Counter
	logs          *logs.Metrics
	tls           *edgetls.Metrics
}

var _ prometheus.Collector = (*Metrics)(nil)

// NewMetrics returns unregistered metrics in the sudoku_edge namespace.
func NewMetrics() *Metrics {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "sudoku", Subsystem: "edge", Name: name, Help: help}
	}
	m := &Metrics{
		rounds: prometheus.NewCounter(prometheus.CounterOpts(opts("discovery_rounds_total",
			"Worker lookups, the one before nginx starts included."))),
		lookupErrors: prometheus.NewCounter(prometheus.CounterOpts(opts("discovery_errors_total",
			"Worker lookups that failed; the upstream kept its servers."))),
		workers: prometheus.NewGauge(prometheus.GaugeOpts(opts("workers", "Worker addresses in nginx's upstream."))),
		budget: prometheus.NewGauge(prometheus.GaugeOpts(opts("worker_budget",
			"Workers whose share of requests nginx admits (the most seen within the hold)."))),
		configApplies: prometheus.NewCounterVec(prometheus.CounterOpts(opts("nginx_reloads_total",
			"Changed configurations by outcome: reloaded, rejected by nginx -t (old files kept), failed.")), []string{"outcome"}),
		restarts: prometheus.NewCounter(prometheus.CounterOpts(opts("nginx_restarts_total",
			"nginx masters that exited on their own and were started again (the listening sockets stayed open)."))),
		logs: logs.NewMetrics(),
		tls:  edgetls.NewMetrics(),
	}
	for _, o := range []proc.Outcome{proc.Reloaded, proc.Rejected, proc.Failed} {
		m.configApplies.WithLabelValues(o.String())
	}
	return m
}

func (m *Metrics) collectors() []prometheus.Collector {
	own := []prometheus.Collector{m.rounds, m.lookupErrors, m.workers, m.budget, m.configApplies, m.restarts}
	return slices.Concat(own, m.logs.Collectors(), m.tls.Collectors())
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

// logMetrics and tlsMetrics are the rooms' own metrics; nil without
// metrics.
func (m *Metrics) logMetrics() *logs.Metrics {
	if m == nil {
		return nil
	}
	return m.logs
}

func (m *Metrics) tlsMetrics() *edgetls.Metrics {
	if m == nil {
		return nil
	}
	return m.tls
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

// applied counts one Apply that changed something (proc.Applier.Count).
func (m *Metrics) applied(o proc.Outcome) {
	if m == nil {
		return
	}
	m.configApplies.WithLabelValues(o.String()).Inc()
}

func (m *Metrics) restarted() {
	if m == nil {
		return
	}
	m.restarts.Inc()
}
