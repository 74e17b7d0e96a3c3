package fcgiserver

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts what Serve sees of its connections and is their
// prometheus.Collector. Build it with NewMetrics, hand it to Serve
// (Options.Metrics) and register it; it is safe for concurrent use.
type Metrics struct {
	open      atomic.Int64
	accepted  atomic.Uint64
	byWorker  [3]atomic.Uint64 // closed by Serve: limit, drain, peer_limit
	malformed atomic.Uint64

	// Requests between FCGI_BEGIN_REQUEST and FCGI_END_REQUEST, and the
	// integral of their number over time: everything a request waits for
	// in the worker (its turn on the connection, the CPU, a slot), which
	// a handler's own duration leaves out.
	reqMu     sync.Mutex
	reqActive int64
	reqSince  time.Time
	reqArea   float64 // request seconds up to reqSince

	openDesc, acceptedDesc, closedDesc, malformedDesc, requestsDesc, requestSecondsDesc *prometheus.Desc
}

var _ prometheus.Collector = (*Metrics)(nil)

// closeReasonLabels name the reasons Serve closes a connection itself, in
// the order of Metrics.byWorker.
var closeReasonLabels = [3]string{"limit", "drain", "peer_limit"}

// NewMetrics returns zeroed counters whose names start with namespace_
// (namespace_fastcgi_connections, ...).
func NewMetrics(namespace string) *Metrics {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "fastcgi", name), help, labels, nil)
	}
	return &Metrics{
		openDesc:     d("connections", "Open FastCGI connections."),
		acceptedDesc: d("connections_accepted_total", "FastCGI connections accepted."),
		closedDesc: d("connections_closed_by_worker_total",
			"FastCGI connections the worker closed itself, by reason (limit: per-connection record bounds; drain: shutdown; peer_limit: over -max-conns-per-peer from one address or user).",
			"reason"),
		malformedDesc: d("malformed_requests_total",
			"Requests net/http/fcgi could not turn into an http.Request (bad Host, URI, length), answered 400."),
		requestsDesc: d("requests", "FastCGI requests in the worker now: begun (FCGI_BEGIN_REQUEST), not yet ended."),
		requestSecondsDesc: d("request_seconds_total",
			"Seconds FastCGI requests have spent in the worker, from FCGI_BEGIN_REQUEST to FCGI_END_REQUEST, summed: its rate is the mean number in the worker (Little's law)."),
	}
}

// requests adds n (negative: ends) to the requests in the worker.
func (m *Metrics) requests(n int) {
	now := time.Now()
	m.reqMu.Lock()
	m.reqArea += float64(m.reqActive) * now.Sub(m.reqSince).Seconds()
	m.reqActive += int64(n)
	m.reqSince = now
	m.reqMu.Unlock()
}

// requestTotals returns the requests in the worker and their request
// seconds so far.
func (m *Metrics) requestTotals() (active int64, seconds float64) {
	now := time.Now()
	m.reqMu.Lock()
	defer m.reqMu.Unlock()
	return m.reqActive, m.reqArea + float64(m.reqActive)*now.Sub(m.reqSince).Seconds()
}

// Open is the number of open FastCGI connections now.
func (m *Metrics) Open() int64 { return m.open.Load() }

func (m *Metrics) opened() {
	m.accepted.Add(1)
	m.open.Add(1)
}

// closed counts the end of a connection opened counted or, with
// closeRefused, one closed at accept and never counted open.
func (m *Metrics) closed(why closeReason) {
	switch why {
	case closeRefused:
		m.byWorker[2].Add(1)
		return
	case closeLimit:
		m.byWorker[0].Add(1)
	case closeDrain:
		m.byWorker[1].Add(1)
	}
	m.open.Add(-1)
}

func (m *Metrics) malformedRequest() { m.malformed.Add(1) }

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.openDesc
	ch <- m.acceptedDesc
	ch <- m.closedDesc
	ch <- m.malformedDesc
	ch <- m.requestsDesc
	ch <- m.requestSecondsDesc
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(m.openDesc, prometheus.GaugeValue, float64(m.open.Load()))
	ch <- prometheus.MustNewConstMetric(m.acceptedDesc, prometheus.CounterValue, float64(m.accepted.Load()))
	for i, r := range closeReasonLabels {
		ch <- prometheus.MustNewConstMetric(m.closedDesc, prometheus.CounterValue, float64(m.byWorker[i].Load()), r)
	}
	ch <- prometheus.MustNewConstMetric(m.malformedDesc, prometheus.CounterValue, float64(m.malformed.Load()))
	active, seconds := m.requestTotals()
	ch <- prometheus.MustNewConstMetric(m.requestsDesc, prometheus.GaugeValue, float64(active))
	ch <- prometheus.MustNewConstMetric(m.requestSecondsDesc, prometheus.CounterValue, seconds)
}
