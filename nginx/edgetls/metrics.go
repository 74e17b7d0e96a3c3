package edgetls

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics reports the certificates nginx serves and the orders that
// failed, gathered by nginx.Metrics (Collectors); a nil *Metrics counts
// nothing.
type Metrics struct {
	certExpiry      *prometheus.GaugeVec
	certPlaceholder *prometheus.GaugeVec
	certFailures    prometheus.Counter
}

// NewMetrics returns unregistered metrics in the sudoku_edge namespace.
func NewMetrics() *Metrics {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "sudoku", Subsystem: "edge", Name: name, Help: help}
	}
	return &Metrics{
		certExpiry: prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("certificate_expiry_timestamp_seconds",
			"When the certificate nginx serves for a TLS domain expires (Unix time); 0 while it serves the self-signed placeholder, which no client trusts.")),
			[]string{"domain"}),
		certPlaceholder: prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("certificate_placeholder",
			"1 while nginx serves the self-signed placeholder for a TLS domain (no certificate issued yet), else 0.")),
			[]string{"domain"}),
		certFailures: prometheus.NewCounter(prometheus.CounterOpts(opts("certificate_failures_total",
			"Certificate orders and renewals that failed (certmagic retries them)."))),
	}
}

// Collectors lists the metrics, for the edge's one collector (nginx.Metrics)
// to gather.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.certExpiry, m.certPlaceholder, m.certFailures}
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
