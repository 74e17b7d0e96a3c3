package suite

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"sudoku-fcgi/cmd/sudoku-load/load"
)

// Scenarios that must know when each request was sent and how it ended
// (failover, hung worker, reloads, bursts, the latency of the 503s alone)
// run their load through the engine (load.Load) with a hook that keeps one
// record per request. Latency counts from the scheduled send time, so a
// stalled server shows in the tail (no coordinated omission).

// Outcome labels of a record: the engine's kinds, with the status of a
// 4xx or 5xx other than 503 ("4xx:429", "5xx:502").
const (
	kindOK    = "ok"
	kindWrong = "wrong_answer"
	kindBusy  = "503"
	// kindBusyBare: a 503 without Retry-After, which the service never
	// sends: a failure, not a busy answer.
	kindBusyBare = "503:no_retry_after"
	kindRefused  = "refused"
	kindReset    = "reset"
	kindTimeout  = "timeout"
	kindOther    = "other_error"
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
	// Err is the client's error text of a failure other than a busy 503
	// (a timeout says whether a connection was ever had: "while waiting
	// for connection"), so that a failed run says where requests were lost.
	Err string
}

// failed reports whether the client saw anything but a correct answer.
func (r record) failed() bool { return r.Kind != kindOK }

// label names an engine outcome as a record does.
func label(o load.Outcome) string {
	switch o.Kind {
	case load.KindOK:
		return kindOK
	case load.KindWrong:
		return kindWrong
	case load.KindBusy:
		if o.RetryAfter == "" {
			return kindBusyBare
		}
		return kindBusy
	case load.KindRefused:
		return kindRefused
	case load.KindReset:
		return kindReset
	case load.KindTimeout:
		return kindTimeout
	}
	if o.Status != 0 {
		return fmt.Sprintf("%dxx:%d", o.Status/100, o.Status)
	}
	return kindOther
}

type loadSpec struct {
	Rate     float64       // requests per second, evenly spaced
	Duration time.Duration // how long to send
	Conns    int           // max connections to nginx
	Puzzles  []load.Puzzle
	Timeout  time.Duration // per request
	Name     string        // for progress lines and nginx's log (userAgent)
	// Burst, when > 1, sends Burst requests at once every Interval instead
	// of evenly spaced requests.
	Burst    int
	Interval time.Duration
	// MaxInFlight, when > 0, skips (kindSkipped) a request due while that
	// many are in flight, instead of queueing it in the client.
	MaxInFlight int
	// Then, when set, are the puzzles of the requests due from ThenAt on.
	Then   []load.Puzzle
	ThenAt time.Duration
}

type loadResult struct {
	Spec    loadSpec
	Start   time.Time
	Records []record // one per request sent
	// Skipped counts the requests due but never sent (MaxInFlight). It is
	// a counter, not records: the skips of an overload would be millions
	// of records, whose memory and GC would load the client in the seconds
	// the recovery is measured.
	Skipped int
	// Err is why the load could not run at all; it counts as a failure.
	Err error

	client *load.Client
}

// summary summarizes the run over dur (0: no rates), skips included.
func (r *loadResult) summary(dur time.Duration) summary {
	s := summarize(r.Records, dur)
	s.Skipped = r.Skipped
	if r.Skipped > 0 {
		s.Kinds[kindSkipped] = r.Skipped
	}
	if r.Err != nil {
		s.Kinds["not_run: "+r.Err.Error()]++
		s.broken++
	}
	return s
}

// phase sets up one load run: the engine's configuration, with a hook
// that fills the returned result, and progress lines to progress.
func phase(base string, spec loadSpec, progress io.Writer) (load.LoadConfig, *loadResult) {
	if spec.Conns <= 0 {
		spec.Conns = 64
	}
	if spec.Timeout <= 0 {
		spec.Timeout = 15 * time.Second
	}
	res := &loadResult{Spec: spec}
	rate, burst := spec.Rate, 1
	if spec.Burst > 1 {
		rate, burst = float64(spec.Burst)/spec.Interval.Seconds(), spec.Burst
	}
	res.client, res.Err = load.NewClient(load.ClientConfig{URL: base, Conns: spec.Conns, Timeout: spec.Timeout, UserAgent: userAgent(spec.Name)})
	var mu sync.Mutex
	return load.LoadConfig{Client: res.client, Puzzles: spec.Puzzles, Then: spec.Then, ThenAt: spec.ThenAt, Target: base, Conns: spec.Conns,
		Rate: rate, Burst: burst, Duration: spec.Duration, Grace: spec.Timeout + 5*time.Second, MaxInFlight: spec.MaxInFlight,
		Progress: func(t load.Tick) {
			fmt.Fprintf(progress, "    [%s %2ds] sent %d, answered %d this second (503 %d, errors %d), in flight %d, backlog %d\n",
				spec.Name, t.Second, t.Sent, t.Received, t.Busy, t.Errors, t.InFlight, t.Backlog)
		},
		OnSample: func(sm load.Sample) {
			mu.Lock()
			defer mu.Unlock()
			if !sm.Sent {
				res.Skipped++
				return
			}
			r := record{At: sm.Due, Latency: sm.Latency, Status: sm.Status, Kind: label(sm.Outcome), Worker: sm.Worker}
			if r.failed() && r.Kind != kindBusy && sm.Outcome.Err != nil {
				r.Err = sm.Outcome.Err.Error()
			}
			res.Records = append(res.Records, r)
		}}, res
}

// finish completes res with the engine's result of its run.
func (res *loadResult) finish(r *load.Result, err error) *loadResult {
	res.client.Close()
	if r == nil {
		res.Err = err
		return res
	}
	res.Start = r.Start
	sort.Slice(res.Records, func(i, j int) bool { return res.Records[i].At < res.Records[j].At })
	return res
}

// drive runs one open-loop load and returns every request's record.
func drive(ctx context.Context, base string, spec loadSpec, progress io.Writer) *loadResult {
	cfg, res := phase(base, spec, progress)
	if res.Err != nil {
		return res
	}
	return res.finish(load.Load(ctx, cfg))
}

// userAgent names a load phase in nginx's access log, where nginxRequests finds
// its requests.
func userAgent(phase string) string { return "sudoku-reliability/" + phase }

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
	broken    int // the load did not run (loadResult.Err)
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
	s.P50, s.P99, s.P999, s.Max = load.PercentileOf(lat, 50), load.PercentileOf(lat, 99), load.PercentileOf(lat, 99.9), load.PercentileOf(lat, 100)
	if dur > 0 {
		s.Rate = float64(s.Sent) / dur.Seconds()
		s.Goodput = float64(s.OK) / dur.Seconds()
	}
	return s
}

// failures counts a skipped request as failed too.
func (s summary) failures() int { return s.Sent - s.OK + s.Skipped + s.broken }

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

// failedWhen says when the requests that failed with something other than
// a 503 were due and how long they took ("" when none did): it tells a
// stall at one moment (a kill, a reload) from failures spread over the run.
func failedWhen(recs []record) string {
	n := 0
	var first, last, slowest time.Duration
	errs := map[string]int{}
	for _, r := range recs {
		if r.Kind == kindOK || r.Kind == kindBusy {
			continue
		}
		if n == 0 {
			first = r.At
		}
		n++
		last = r.At
		slowest = max(slowest, r.Latency)
		if r.Err != "" {
			errs[errorShape(r.Err)]++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; they were due from %v to %v, the slowest ended after %v%s",
		first.Round(100*time.Millisecond), last.Round(100*time.Millisecond), slowest.Round(100*time.Millisecond), topErrors(errs, 3))
}

// errorShape is an error text without what differs between requests of
// one failure: the query string and the client's port.
func errorShape(s string) string {
	return clientPort.ReplaceAllString(queryString.ReplaceAllString(s, "?..."), "$1:*->")
}

var (
	queryString = regexp.MustCompile(`\?puzzle=[^" ]*`)
	clientPort  = regexp.MustCompile(`(\d+\.\d+\.\d+\.\d+):\d+->`)
)

// topErrors lists the n most frequent error texts with their counts.
func topErrors(errs map[string]int, n int) string {
	texts := slices.SortedFunc(maps.Keys(errs), func(a, b string) int { return cmp.Or(errs[b]-errs[a], strings.Compare(a, b)) })
	var b strings.Builder
	for i, t := range texts {
		if i == n {
			fmt.Fprintf(&b, "; %d other errors", len(texts)-n)
			break
		}
		fmt.Fprintf(&b, "; %d x %q", errs[t], t)
	}
	return b.String()
}
