package suite

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// references are the figures the scenarios' ratios are taken against,
// measured with the admission controller off (the concurrency cap only):
// with a rate set too low, C and the saturations would fall with it and
// every ratio would pass.
type references struct {
	sat32, sat480 float64 // answers/s with 32 and 480 requests in flight, the load's puzzles
	hardSat32     float64 // the same with 32 in flight, the hard puzzles
	err           error   // why a figure is missing (0)
}

// measureReferences measures the saturations with the controller off.
func (s *suite) measureReferences(ctx context.Context) {
	fmt.Fprintf(s.out, "== references, admission controller off: saturation with 32 and %d in flight, and with 32 on the hard puzzles\n", deepInFlight)
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

// setAdmission runs nginx with sudoku-edge's -admission mode ("" the
// stack's own setting): it rewrites the override and recreates the nginx
// container when the setting changes, then waits until the stack serves.
func (s *suite) setAdmission(ctx context.Context, mode string) error {
	if mode == "off" && s.admissionFile != "" {
		fmt.Fprintf(s.out, "== admission controller: off\n")
		return nil
	}
	s.st.extraFiles = slices.DeleteFunc(s.st.extraFiles, func(f string) bool { return f == s.admissionFile })
	s.admissionFile = ""
	if mode != "" {
		f, err := admissionOverride(s.cfg.Project, mode)
		if err != nil {
			return err
		}
		s.st.extraFiles = append(s.st.extraFiles, f)
		s.admissionFile = f
	}
	fmt.Fprintf(s.out, "== admission controller: %s (nginx recreated)\n", orDefault(mode, "the stack's own setting"))
	t0 := time.Now()
	s.st.baseURL = s.st.publishedURL // nginx's address on the network may change
	if _, err := s.st.composeCmd(ctx, true, "up", "-d", "--no-deps", "nginx"); err != nil {
		return fmt.Errorf("recreating nginx: %w", err)
	}
	if err := s.st.waitReady(ctx, 90*time.Second); err != nil {
		return err
	}
	if s.cfg.Via == "direct" {
		if err := s.st.useDirect(ctx); err != nil {
			return fmt.Errorf("-via direct: %w", err)
		}
	}
	fmt.Fprintf(s.out, "== nginx serving again after %v at %s\n", time.Since(t0).Round(time.Second), s.st.baseURL)
	// Let the controller take its first samples.
	return sleep(ctx, 3*time.Second)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
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
		t.busy += m[`sudoku_requests_total{outcome="too_busy",route="get"}`]
		t.requestSeconds += m["sudoku_fastcgi_request_seconds_total"]
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
				if v, ok := m["sudoku_fastcgi_requests"]; err == nil && ok {
					mu.Lock()
					got[addr] = append(got[addr], v)
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

// scrapeMetrics fetches Prometheus text and returns its samples by their
// series as written (name{labels} with the labels in the exposition's
// order: client_golang sorts them by name).
func scrapeMetrics(ctx context.Context, url string) (map[string]float64, error) {
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
	m := map[string]float64{}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 4<<20))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m, sc.Err()
}

// percentileF is the p-th percentile of vs (nearest rank), 0 when empty.
func percentileF(vs []float64, p float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// admissionDecision is one "admission rate" line of sudoku-edge's log: a
// rate the controller rendered.
type admissionDecision struct {
	Time     time.Time `json:"time"`
	Rate     float64   `json:"rate"`
	Reason   string    `json:"reason"`
	InFlight float64   `json:"in_flight_per_slot"`
}

// admissionDecisions returns the rates sudoku-edge rendered since from,
// from its log on the nginx container's stderr.
func (s *suite) admissionDecisions(ctx context.Context, from time.Time) ([]admissionDecision, error) {
	ng := s.nginxID(ctx)
	if ng == "" {
		return nil, errors.New("no nginx container")
	}
	cmd := exec.CommandContext(ctx, "docker", "logs", "--since", from.UTC().Format(time.RFC3339Nano), ng)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("docker logs: %w", err)
	}
	var ds []admissionDecision
	for _, line := range strings.Split(stderr.String(), "\n") {
		if !strings.Contains(line, `"admission rate"`) {
			continue
		}
		var d admissionDecision
		if json.Unmarshal([]byte(line), &d) == nil {
			ds = append(ds, d)
		}
	}
	return ds, nil
}

// decisionsString formats decisions as "+3s 5400/s (cut, 7.2 in flight per slot), ...".
func decisionsString(ds []admissionDecision, from time.Time) string {
	if len(ds) == 0 {
		return "none"
	}
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("+%.0fs %.0f/s (%s, %.1f)", d.Time.Sub(from).Seconds(), d.Rate, d.Reason, d.InFlight)
	}
	return strings.Join(parts, ", ")
}
