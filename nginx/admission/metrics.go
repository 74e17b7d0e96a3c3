package admission

import (
	"github.com/prometheus/client_golang/prometheus"

	"sudoku-fcgi/nginx/internal/edgemetric"
)

// Metrics show the controller: its rate, its inputs and its decisions,
// and nginx's own answers as the log counter reads them. A nil *Metrics
// counts nothing.
type Metrics struct {
	set                                          *edgemetric.Set
	rate, computed, capacity, floor              prometheus.Gauge
	answered, busy503, wait, inFlight, congested prometheus.Gauge
	workers                                      prometheus.Gauge
	decisions                                    *prometheus.CounterVec
	scrapeErrors                                 prometheus.Counter
	admission                                    *prometheus.CounterVec
	responses                                    *prometheus.CounterVec
	logErrors                                    prometheus.Counter
}

// NewMetrics returns unregistered metrics in the sudoku_edge namespace.
func NewMetrics() *Metrics {
	s := new(edgemetric.Set)
	m := &Metrics{
		set:  s,
		rate: s.Gauge("admission_rate", "Rate of nginx's admission queue now, requests/s (0: off)."),
		computed: s.Gauge("admission_computed_rate",
			"Rate the control law computed, requests/s; the rendered one follows it by the hysteresis."),
		capacity: s.Gauge("admission_capacity", "Workers' answers per second while congested (EWMA): what they can serve."),
		floor: s.Gauge("admission_floor_rate",
			"Lowest rate the controller sets, requests/s (its -admission-min)."),
		answered: s.Gauge("admission_workers_answered",
			"Workers' GET answers per second over the last scrape window."),
		busy503: s.Gauge("admission_workers_busy",
			"Workers' busy 503s per second over the last scrape window."),
		wait: s.Gauge("admission_workers_queue_wait_seconds",
			"Workers' mean queue wait over the last scrape window."),
		inFlight: s.Gauge("admission_workers_in_flight_per_slot",
			"Workers' mean requests in flight per solver slot over the last scrape window: the law's signal."),
		congested: s.Gauge("admission_congested",
			"1 while the workers' requests in flight per slot or busy 503s are over target."),
		workers: s.Gauge("admission_workers_scraped", "Workers whose metrics fed the last decision."),
		decisions: s.CounterVec("admission_decisions_total",
			"Controller decisions by reason: raise and cut rendered a new rate, hold kept it, no_data had no worker.", "reason"),
		scrapeErrors: s.Counter("admission_scrape_errors_total",
			"Worker metrics scrapes (and lookups) that failed."),
		admission: s.CounterVec("admission_requests_total",
			"GET /sudoku requests by what nginx's limits did (passed, delayed, rejected), from nginx's access log.", "result"),
		responses: s.CounterVec("nginx_responses_total",
			"Answers by status code and source, from nginx's access log: 429, 503 and under 400 from one request in 16 (x16), the other codes of 400 and up exactly (every answer exactly with -access-log-all); source nginx when it answered itself (its limits, its errors, no worker reached), worker otherwise.", "code", "source"),
		logErrors: s.Counter("access_log_errors_total", "Access log lines the edge could not read."),
	}
	for _, r := range reasons {
		m.decisions.WithLabelValues(string(r))
	}
	for _, r := range []string{"passed", "delayed", "rejected"} {
		m.admission.WithLabelValues(r)
	}
	return m
}

// Register registers every metric with r.
func (m *Metrics) Register(r prometheus.Registerer) error { return m.set.Register(r) }

func (m *Metrics) decided(d decision, s sample) {
	if m == nil {
		return
	}
	m.rate.Set(d.Rate)
	m.computed.Set(d.Computed)
	m.capacity.Set(d.Capacity)
	m.inFlight.Set(d.InFlight)
	m.decisions.WithLabelValues(string(d.Reason)).Inc()
	var answered, busy, waitSum float64
	for _, w := range s.Workers {
		answered += w.Answered
		busy += w.Busy503
		waitSum += w.QueueWait.Seconds() * (w.Answered + w.Busy503)
	}
	m.answered.Set(answered)
	m.busy503.Set(busy)
	if answered+busy > 0 {
		m.wait.Set(waitSum / (answered + busy))
	} else {
		m.wait.Set(0)
	}
	c := 0.0
	if d.Congested {
		c = 1
	}
	m.congested.Set(c)
	m.workers.Set(float64(len(s.Workers)))
}
