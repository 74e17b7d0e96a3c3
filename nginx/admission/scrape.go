package admission

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// counters is one scrape of a worker's /metrics: the figures the law reads.
type counters struct {
	at                 time.Time
	answered, busy503  float64 // requests_total{route="get"}, by outcome
	waits, waitSeconds float64 // queue_wait_seconds count, sum
	requestSeconds     float64 // fastcgi_request_seconds_total: requests in the worker, integrated
	slots              float64 // pool_slots
}

// parseCounters reads the worker metrics the law needs from Prometheus
// text. A metric the worker does not expose reads 0.
func parseCounters(r io.Reader, at time.Time) (counters, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return counters{}, fmt.Errorf("parsing worker metrics: %w", err)
	}
	c := counters{at: at}
	if f := fams["sudoku_requests_total"]; f != nil {
		for _, m := range f.GetMetric() {
			var route, outcome string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "route":
					route = l.GetValue()
				case "outcome":
					outcome = l.GetValue()
				}
			}
			if route != "get" {
				continue
			}
			switch outcome {
			case "solved", "no_solution":
				c.answered += m.GetCounter().GetValue()
			case "too_busy":
				c.busy503 += m.GetCounter().GetValue()
			}
		}
	}
	hist := func(name string) (count, sum float64) {
		if f := fams[name]; f != nil && len(f.GetMetric()) > 0 {
			h := f.GetMetric()[0].GetHistogram()
			return float64(h.GetSampleCount()), h.GetSampleSum()
		}
		return 0, 0
	}
	gauge := func(name string) float64 {
		if f := fams[name]; f != nil && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
		return 0
	}
	counter := func(name string) float64 {
		if f := fams[name]; f != nil && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
		return 0
	}
	c.waits, c.waitSeconds = hist("sudoku_queue_wait_seconds")
	c.requestSeconds = counter("sudoku_fastcgi_request_seconds_total")
	c.slots = gauge("sudoku_pool_slots")
	return c, nil
}

// window turns two scrapes of one worker into its workerReport; false
// when there is no window (first scrape, a restart reset the counters).
func window(id string, prev, cur counters) (workerReport, bool) {
	dt := cur.at.Sub(prev.at).Seconds()
	d := func(a, b float64) float64 { return b - a }
	if dt <= 0 || cur.answered < prev.answered || cur.waits < prev.waits || cur.requestSeconds < prev.requestSeconds {
		return workerReport{}, false
	}
	w := workerReport{
		ID:       id,
		Answered: d(prev.answered, cur.answered) / dt,
		Busy503:  d(prev.busy503, cur.busy503) / dt,
		InFlight: d(prev.requestSeconds, cur.requestSeconds) / dt,
		Slots:    int(cur.slots),
	}
	if n := cur.waits - prev.waits; n > 0 {
		w.QueueWait = time.Duration((cur.waitSeconds - prev.waitSeconds) / n * float64(time.Second))
	}
	return w, true
}

// resolver is the part of net.resolver the Scraper uses.
type resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// Scraper reads every worker's /metrics and keeps the previous scrape of
// each, so that scrape returns rates over the time between two calls.
// Targets are host:port; each host is resolved on every scrape, so that a
// worker that joins is scraped from the next call on.
type Scraper struct {
	Targets  []string
	resolver resolver     // nil means net.DefaultResolver
	client   *http.Client // nil means a client with a 1 s timeout
	path     string       // "" means /metrics

	mu   sync.Mutex
	prev map[string]counters
}

// scrape returns the workers that answered twice in a row, and how many
// addresses failed.
func (s *Scraper) scrape(ctx context.Context, now time.Time) (workers []workerReport, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prev == nil {
		s.prev = map[string]counters{}
	}
	res := s.resolver
	if res == nil {
		res = net.DefaultResolver
	}
	client := s.client
	if client == nil {
		client = &http.Client{Timeout: time.Second}
	}
	path := s.path
	if path == "" {
		path = "/metrics"
	}
	var addrs []string
	for _, t := range s.Targets {
		host, port, err := net.SplitHostPort(t)
		if err != nil {
			failed++
			continue
		}
		ips, err := res.LookupHost(ctx, host)
		if err != nil {
			failed++
			continue
		}
		for _, ip := range ips {
			addrs = append(addrs, net.JoinHostPort(ip, port))
		}
	}
	type result struct {
		addr string
		c    counters
		err  error
	}
	results := make(chan result, len(addrs))
	for _, a := range addrs {
		go func() {
			c, err := scrapeOne(ctx, client, "http://"+a+path, now)
			results <- result{a, c, err}
		}()
	}
	next := make(map[string]counters, len(addrs))
	for range addrs {
		r := <-results
		if r.err != nil {
			failed++
			continue
		}
		next[r.addr] = r.c
		if p, ok := s.prev[r.addr]; ok {
			if w, ok := window(r.addr, p, r.c); ok {
				workers = append(workers, w)
			}
		}
	}
	s.prev = next
	// The order of the answers is the network's; the law's is the IDs'.
	sortWorkers(workers)
	return workers, failed
}

func scrapeOne(ctx context.Context, client *http.Client, url string, now time.Time) (counters, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return counters{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return counters{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return counters{}, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	return parseCounters(io.LimitReader(resp.Body, 4<<20), now)
}

func sortWorkers(ws []workerReport) {
	slices.SortFunc(ws, func(a, b workerReport) int { return strings.Compare(a.ID, b.ID) })
}
