package logs

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts nginx's answers from its logs: the access log's lines by
// status and source, and the error log's limit refusals and truncated
// answers, gathered by nginx.Metrics (Collectors); a nil *Metrics counts
// nothing.
type Metrics struct {
	responses       *prometheus.CounterVec
	requestSeconds  *prometheus.HistogramVec
	accessLogErrors prometheus.Counter
	truncated       prometheus.Counter
	limited         *prometheus.CounterVec
}

// requestBuckets span nginx's own 503 (under 1 ms) to the batch read
// timeout (35 s).
var requestBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 40}

// NewMetrics returns unregistered metrics in the sudoku_edge namespace.
func NewMetrics() *Metrics {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "sudoku", Subsystem: "edge", Name: name, Help: help}
	}
	every := strconv.Itoa(SampleEvery)
	return &Metrics{
		responses: prometheus.NewCounterVec(prometheus.CounterOpts(opts("nginx_responses_total",
			"Answers by status code and source, from nginx's access log: 429, 503 and under 400 from one request in "+every+" (x"+every+"), the other codes of 400 and up exactly (every answer exactly with -access-log-all); source nginx when it answered itself (its limits, its errors, no worker reached), worker otherwise.")),
			[]string{"code", "source"}),
		requestSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "sudoku", Subsystem: "edge", Name: "nginx_request_duration_seconds",
			Help:    "nginx's time for a request, from its first byte to the answer's last ($request_time), by source as in nginx_responses_total, of the requests in the access log's sample (one in " + every + "; every request with -access-log-all): the latency clients see, but for the network.",
			Buckets: requestBuckets}, []string{"source"}),
		accessLogErrors: prometheus.NewCounter(prometheus.CounterOpts(opts("access_log_errors_total", "Access log lines the edge could not read."))),
		truncated: prometheus.NewCounter(prometheus.CounterOpts(opts("nginx_truncated_answers_total",
			"Answers nginx cut short, without their last chunk, because the worker closed the connection in the middle (a batch whose worker died); from nginx's error log."))),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts(opts("nginx_limited_total",
			"Requests nginx turned away at a limit_req or limit_conn zone: the sudoku_req, sudoku_batch and sudoku_client_* zones are a client over its own limits (429), the others a full service (503); from nginx's error log.")),
			[]string{"zone"}),
	}
}

// Collectors lists the metrics, for the edge's one collector (nginx.Metrics)
// to gather.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.responses, m.requestSeconds, m.accessLogErrors, m.truncated, m.limited}
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

func (m *Metrics) truncatedAnswer() {
	if m == nil {
		return
	}
	m.truncated.Inc()
}

func (m *Metrics) limitedAt(zone string) {
	if m == nil {
		return
	}
	m.limited.WithLabelValues(zone).Inc()
}
