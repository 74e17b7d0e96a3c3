package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// references are the figures the scenarios' ratios are taken against,
// measured before C on the quiet stack: the saturations, with nothing shed.
type references struct {
	sat32, sat480 float64 // answers/s with 32 and 480 requests in flight, the load's puzzles
	hardSat32     float64 // the same with 32 in flight, the hard puzzles
	err           error   // why a figure is missing (0)
}

// measureReferences measures the saturations.
func (s *suite) measureReferences(ctx context.Context) {
	fmt.Fprintf(s.out, "== references: saturation with 32 and %d in flight, and with 32 on the hard puzzles\n", deepInFlight)
	sats, err := s.saturation(ctx, s.puzzles, 10000, 32, deepInFlight)
	if len(sats) > 0 {
		s.ref.sat32 = sats[0]
	}
	if len(sats) > 1 {
		s.ref.sat480 = sats[1]
	}
	if err == nil {
		var hard []float64
		hard, err = s.saturation(ctx, s.hard, 2000, 32)
		if len(hard) > 0 {
			s.ref.hardSat32 = hard[0]
		}
	}
	s.ref.err = err
	fmt.Fprintf(s.out, "== references: saturation %.0f/s with 32 in flight, %.0f/s with %d (%.2f of it), hard puzzles %.0f/s with 32 (error: %v)\n",
		s.ref.sat32, s.ref.sat480, deepInFlight, s.ref.sat480/max(1, s.ref.sat32), s.ref.hardSat32, err)
}

// workerMetricsPort is where each worker serves /metrics on the compose
// network (SUDOKU_FCGI_INTERNAL_LISTEN).
const workerMetricsPort = "9001"

// workerMetricsURLs returns each running worker's /metrics URL on the
// compose network, by container address.
func (s *suite) workerMetricsURLs(ctx context.Context) (map[string]string, error) {
	sts, err := s.st.inspect(ctx, s.workers(ctx)...)
	if err != nil {
		return nil, err
	}
	urls := map[string]string{}
	for _, c := range sts {
		for _, n := range c.NetworkSettings.Networks {
			if n.IPAddress != "" {
				urls[n.IPAddress] = "http://" + net.JoinHostPort(n.IPAddress, workerMetricsPort) + "/metrics"
				break
			}
		}
	}
	if len(urls) == 0 {
		return nil, errors.New("no worker has an address on the compose network")
	}
	return urls, nil
}

// workerTotals are counters summed over the workers' /metrics.
type workerTotals struct {
	busy           float64 // GET requests answered 503 busy by a worker
	requestSeconds float64 // requests in the worker (FastCGI begin to end), integrated
}

// workerCounters reads every worker's /metrics once and sums the counters
// the scenarios judge.
func (s *suite) workerCounters(ctx context.Context) (workerTotals, error) {
	urls, err := s.workerMetricsURLs(ctx)
	if err != nil {
		return workerTotals{}, err
	}
	var t workerTotals
	for _, u := range urls {
		m, err := scrapeMetrics(ctx, u)
		if err != nil {
			return workerTotals{}, err
		}
		t.busy += m.value("sudoku_requests_total", "outcome", "too_busy", "route", "get")
		t.requestSeconds += m.value("sudoku_fastcgi_request_seconds_total")
	}
	return t, nil
}

// sampleInFlight polls each worker's sudoku_fastcgi_requests (requests in
// the worker, their wait for a handler too) every interval until stop,
// which returns the samples by worker address.
func (s *suite) sampleInFlight(ctx context.Context, interval time.Duration) (stop func() map[string][]float64) {
	ctx, cancel := context.WithCancel(ctx)
	urls, err := s.workerMetricsURLs(ctx)
	if err != nil {
		fmt.Fprintf(s.out, "    in-flight samples: %v\n", err)
	}
	var mu sync.Mutex
	got := map[string][]float64{}
	var wg sync.WaitGroup
	for addr, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sleep(ctx, interval) == nil {
				m, err := scrapeMetrics(ctx, u)
				if err == nil && m.has("sudoku_fastcgi_requests") {
					mu.Lock()
					got[addr] = append(got[addr], m.value("sudoku_fastcgi_requests"))
					mu.Unlock()
				}
			}
		}()
	}
	return func() map[string][]float64 {
		cancel()
		wg.Wait()
		return got
	}
}

// metricFamilies is a Prometheus exposition, parsed.
type metricFamilies map[string]*dto.MetricFamily

// value sums the counters and gauges named name whose labels include every
// pair of labels (name, value, name, value, ...); 0 when there are none.
func (fs metricFamilies) value(name string, labels ...string) float64 {
	var v float64
	for _, mt := range fs[name].GetMetric() {
		if !hasLabels(mt, labels) {
			continue
		}
		v += mt.GetCounter().GetValue() + mt.GetGauge().GetValue()
	}
	return v
}

// has reports whether the exposition has a metric named name.
func (fs metricFamilies) has(name string) bool { return len(fs[name].GetMetric()) > 0 }

func hasLabels(mt *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, l := range mt.GetLabel() {
			if l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// scrapeMetrics fetches and parses a Prometheus exposition.
func scrapeMetrics(ctx context.Context, url string) (metricFamilies, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return parseMetrics(io.LimitReader(resp.Body, 4<<20))
}

// parseMetrics parses Prometheus text.
func parseMetrics(r io.Reader) (metricFamilies, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fs, err := p.TextToMetricFamilies(r)
	return metricFamilies(fs), err
}
