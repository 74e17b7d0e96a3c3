package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"sudoku-fcgi/solver"
)

// The suite's own open-loop driver. sudoku-load measures capacity and runs
// the long fixed-rate and never-read attacks; scenarios that must know when
// each request was sent and how it ended (failover, hung worker, reloads,
// bursts, the latency of the 503s alone) use this driver, which keeps one
// record per request. Latency counts from the scheduled send time, so a
// stalled server shows in the tail (no coordinated omission).

// outcome kinds
const (
	kindOK      = "ok"
	kindWrong   = "wrong_answer"
	kindBusy    = "503"
	kindRefused = "refused"
	kindReset   = "reset"
	kindTimeout = "timeout"
	kindOther   = "other_error"
	// kindSkipped: never sent, because MaxInFlight requests were already
	// in flight (the client could not keep up with its own schedule).
	kindSkipped = "client_skipped"
)

// record is one request's fate.
type record struct {
	At      time.Duration // scheduled send time from the run's start
	Latency time.Duration // from scheduled send time to the end of the body
	Status  int
	Kind    string // kindOK, kindWrong, "4xx:429", "5xx:502", kindBusy, transport errors
	Worker  string
	JSON    bool // the body parsed as JSON
}

// failed reports whether the client saw anything but a correct answer.
func (r record) failed() bool { return r.Kind != kindOK }

type loadSpec struct {
	Rate     float64       // requests per second, evenly spaced
	Duration time.Duration // how long to send
	Conns    int           // max connections to nginx
	Puzzles  []string
	Timeout  time.Duration // per request
	Name     string        // for progress lines
	// Burst, when > 1, sends Burst requests at once every Interval instead
	// of evenly spaced requests.
	Burst    int
	Interval time.Duration
	// Stop, when closed, ends the sending early; requests already sent
	// still finish.
	Stop <-chan struct{}
	// MaxInFlight, when > 0, skips (kindSkipped) a request due while that
	// many are in flight, instead of queueing it in the client.
	MaxInFlight int
}

type loadResult struct {
	Spec    loadSpec
	Start   time.Time
	Records []record // one per request sent
	// Skipped counts the requests due but never sent (MaxInFlight). It is a
	// counter, not records: at 24,000/s offered a minute's skips were a
	// million records, whose memory and GC were the client's, in the
	// seconds the recovery was measured.
	Skipped int
}

// summary summarizes the run over dur (0: no rates), skips included.
func (r *loadResult) summary(dur time.Duration) summary {
	s := summarize(r.Records, dur)
	s.Skipped = r.Skipped
	if r.Skipped > 0 {
		s.Kinds[kindSkipped] = r.Skipped
	}
	return s
}

// drive runs one open-loop load and returns every request's record.
func drive(ctx context.Context, base string, spec loadSpec, progress io.Writer) *loadResult {
	if spec.Conns <= 0 {
		spec.Conns = 64
	}
	if spec.Timeout <= 0 {
		spec.Timeout = 15 * time.Second
	}
	tr := &http.Transport{
		MaxConnsPerHost:     spec.Conns,
		MaxIdleConnsPerHost: spec.Conns,
		DisableCompression:  true,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	res := &loadResult{Spec: spec, Start: time.Now()}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		sent     atomic.Int64
		skipped  int // only the sending loop touches it
		inflight atomic.Int64
		cur      = map[string]int{} // kinds in the current second
		curN     int
	)
	add := func(r record) {
		mu.Lock()
		res.Records = append(res.Records, r)
		cur[r.Kind]++
		curN++
		mu.Unlock()
	}
	stopProgress := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		sec := 0
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
			}
			sec++
			mu.Lock()
			var parts []string
			for k, v := range cur {
				if k != kindOK {
					parts = append(parts, fmt.Sprintf("%s=%d", k, v))
				}
			}
			sort.Strings(parts)
			fmt.Fprintf(progress, "    [%s %2ds] sent %d, done %d this second (ok %d), in flight %d %s\n",
				spec.Name, sec, sent.Load(), curN, cur[kindOK], inflight.Load(), strings.Join(parts, " "))
			clear(cur)
			curN = 0
			mu.Unlock()
		}
	}()

	one := func(at time.Duration, puzzle string) {
		defer wg.Done()
		defer inflight.Add(-1)
		add(doRequest(ctx, client, base, puzzle, userAgent(spec.Name), res.Start, at, spec.Timeout))
	}

	var schedule []time.Duration
	if spec.Burst > 1 {
		for t := time.Duration(0); t < spec.Duration; t += spec.Interval {
			for i := 0; i < spec.Burst; i++ {
				schedule = append(schedule, t)
			}
		}
	} else {
		n := int(spec.Rate * spec.Duration.Seconds())
		step := time.Duration(float64(time.Second) / spec.Rate)
		for i := 0; i < n; i++ {
			schedule = append(schedule, time.Duration(i)*step)
		}
	}
	for i, at := range schedule {
		if d := time.Until(res.Start.Add(at)); d > 0 {
			select {
			case <-ctx.Done():
			case <-spec.Stop:
			case <-time.After(d):
			}
		}
		if ctx.Err() != nil || stopped(spec.Stop) {
			break
		}
		if spec.MaxInFlight > 0 && inflight.Load() >= int64(spec.MaxInFlight) {
			skipped++
			continue
		}
		wg.Add(1)
		sent.Add(1)
		inflight.Add(1)
		go one(at, spec.Puzzles[i%len(spec.Puzzles)])
	}
	wg.Wait()
	close(stopProgress)
	res.Skipped = skipped
	sort.Slice(res.Records, func(i, j int) bool { return res.Records[i].At < res.Records[j].At })
	return res
}

func stopped(c <-chan struct{}) bool {
	if c == nil {
		return false
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

type solveBody struct {
	Puzzle   string `json:"puzzle"`
	Solution string `json:"solution"`
	Error    string `json:"error"`
}

// userAgent names a load phase in nginx's access log, where nginxRequests finds
// its requests.
func userAgent(phase string) string { return "sudoku-reliability/" + phase }

func doRequest(ctx context.Context, client *http.Client, base, puzzle, agent string, start time.Time, at, timeout time.Duration) record {
	r := record{At: at}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/sudoku?puzzle="+url.QueryEscape(puzzle), nil)
	req.Header["User-Agent"] = []string{agent}
	resp, err := client.Do(req)
	if err != nil {
		r.Latency = time.Since(start.Add(at))
		r.Kind = errKind(err)
		return r
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	r.Latency = time.Since(start.Add(at))
	r.Status = resp.StatusCode
	r.Worker = resp.Header.Get("X-Sudoku-Worker")
	if err != nil {
		r.Kind = errKind(err)
		return r
	}
	var b solveBody
	r.JSON = json.Unmarshal(body, &b) == nil
	switch {
	case resp.StatusCode == 200:
		if checkSolution(puzzle, b.Solution) {
			r.Kind = kindOK
		} else {
			r.Kind = kindWrong
		}
	case resp.StatusCode == 503:
		r.Kind = kindBusy
	case resp.StatusCode >= 500:
		r.Kind = fmt.Sprintf("5xx:%d", resp.StatusCode)
	default:
		r.Kind = fmt.Sprintf("%dxx:%d", resp.StatusCode/100, resp.StatusCode)
	}
	return r
}

func errKind(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded), os.IsTimeout(err):
		return kindTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return kindRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, syscall.EPIPE):
		return kindReset
	}
	return kindOther
}

// checkSolution reports whether sol is a complete valid grid that keeps
// every given of puzzle.
func checkSolution(puzzle, sol string) bool {
	p, err := solver.Parse(puzzle)
	if err != nil || len(sol) != 81 {
		return false
	}
	s, err := solver.Parse(sol)
	if err != nil { // Parse also rejects duplicate digits in a unit
		return false
	}
	for i := range s {
		if s[i] == 0 || (p[i] != 0 && p[i] != s[i]) {
			return false
		}
	}
	return true
}

// summary is what scenarios print about a load run.
type summary struct {
	Sent, OK  int // Sent: requests sent (Skipped not among them)
	Skipped   int // due but never sent (loadResult.Skipped)
	Kinds     map[string]int
	P50, P99  time.Duration
	P999, Max time.Duration
	Rate      float64 // achieved send rate
	Goodput   float64 // correct answers per second of the run
	Workers   map[string]int
}

func summarize(recs []record, dur time.Duration) summary {
	s := summary{Kinds: map[string]int{}, Workers: map[string]int{}}
	var lat []time.Duration
	for _, r := range recs {
		s.Sent++
		s.Kinds[r.Kind]++
		if r.Kind == kindOK {
			s.OK++
		}
		if r.Worker != "" {
			s.Workers[r.Worker]++
		}
		lat = append(lat, r.Latency)
	}
	s.P50, s.P99, s.P999, s.Max = pct(lat, 50), pct(lat, 99), pct(lat, 99.9), pct(lat, 100)
	if dur > 0 {
		s.Rate = float64(s.Sent) / dur.Seconds()
		s.Goodput = float64(s.OK) / dur.Seconds()
	}
	return s
}

// pct returns the p-th percentile (nearest rank) of d; it sorts d.
func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	i := int(math.Ceil(p/100*float64(len(d)))) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(d) {
		i = len(d) - 1
	}
	return d[i]
}

// failures counts a skipped request as failed too.
func (s summary) failures() int { return s.Sent - s.OK + s.Skipped }

// kindsString lists the non-ok outcomes, or "none".
func (s summary) kindsString() string {
	var parts []string
	for k, v := range s.Kinds {
		if k != kindOK {
			parts = append(parts, fmt.Sprintf("%s=%d", k, v))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

func mib(b int64) string { return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20)) }
