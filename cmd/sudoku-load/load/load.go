package load

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// LoadConfig configures Load.
type LoadConfig struct {
	Client  *Client
	Puzzles []Puzzle
	// Then, when set, replaces Puzzles for the requests due from ThenAt
	// on: the mix changes under the same schedule and connections.
	Then   []Puzzle
	ThenAt time.Duration
	// Target names the server in the result.
	Target string
	// Conns is the number of requests that may be in flight at once (and
	// of connections).
	Conns int
	// Rate is the fixed request rate, requests/s; requests are evenly
	// spaced at 1/Rate, or come in groups of Burst.
	Rate float64
	// Burst, when > 1, makes Burst requests due at once every Burst/Rate
	// seconds: bursts at the same average rate.
	Burst int
	// Duration is how long requests are scheduled for.
	Duration time.Duration
	// Grace bounds how long to wait for answers after Duration.
	Grace time.Duration
	// Stop, when closed, ends the schedule early; requests already sent
	// still finish (Background closes it).
	Stop <-chan struct{}
	// MaxInFlight, when > 0, leaves unsent a request that is due while
	// that many are in flight or waiting for a connection, instead of
	// queueing it in the client: the client never holds more than that.
	MaxInFlight int
	// Retry is how many times a request answered busy (a 429 or 503) or
	// not at all is sent again, after the Retry-After of a busy answer
	// (at once after none), as a well-behaved client does. Its latency
	// still counts from its first due time; a wrong answer or another
	// status is never resent.
	Retry int
	// Progress, if set, is called once a second with that second's figures.
	Progress func(Tick)
	// OnSample, if set, is called with every request's fate, sent or not,
	// from the goroutines that send them: it must be safe for concurrent
	// use and quick.
	OnSample func(Sample)
}

// A Sample is one request of a Load run, as OnSample sees it.
type Sample struct {
	// Due is the request's scheduled send time, from the run's start.
	Due time.Duration
	// Latency runs from Due to the end of the answer (0 when not sent).
	Latency time.Duration
	// Sent is false for a request that was due but never sent: the run
	// ended or MaxInFlight was reached first. Its Kind is KindTimeout.
	Sent bool
	Outcome
}

// errConfig is wrapped by errors about a configuration.
var errConfig = errors.New("load: bad configuration")

type job struct {
	p   *Puzzle
	due time.Time
}

// Load runs an open loop: request i is due at start + i/Rate, and its latency
// is measured from that moment, whether or not a connection was free. Requests
// that are due while all Conns are busy wait in a backlog, and their waiting
// counts. This is what keeps a stalled server from hiding (no coordinated
// omission).
func Load(ctx context.Context, cfg LoadConfig) (*Result, error) {
	if cfg.Client == nil || len(cfg.Puzzles) == 0 || cfg.Rate <= 0 || cfg.Duration <= 0 || cfg.Conns < 1 || cfg.Retry < 0 {
		return nil, fmt.Errorf("%w: want a client, puzzles, rate > 0, duration > 0, conns >= 1 and retry >= 0", errConfig)
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 10 * time.Second
	}
	burst := max(cfg.Burst, 1)
	interval := time.Duration(float64(time.Second) * float64(burst) / cfg.Rate)
	if interval <= 0 {
		return nil, fmt.Errorf("%w: rate %.0f/s is too high", errConfig, cfg.Rate)
	}
	total := max(int(cfg.Duration/interval)*burst, 1)

	// Answers must come before Duration + Grace; after that the requests
	// still out are cancelled and count as timeouts.
	start := time.Now().Add(10 * time.Millisecond)
	runCtx, cancel := context.WithDeadline(ctx, start.Add(cfg.Duration+cfg.Grace))
	defer cancel()

	rec := newRecorder(start)
	report := func(s Sample) {
		if cfg.OnSample != nil {
			cfg.OnSample(s)
		}
	}
	unsent := func(due time.Time) {
		rec.Unsent()
		report(Sample{Due: due.Sub(start), Outcome: Outcome{Kind: KindTimeout}})
	}
	var queued atomic.Int64 // handed to the connections and not finished
	jobs := make(chan job, min(total, 1<<16))
	var wg sync.WaitGroup
	for range cfg.Conns {
		wg.Go(func() {
			for j := range jobs {
				if runCtx.Err() != nil {
					unsent(j.due)
					queued.Add(-1)
					continue
				}
				rec.Sent()
				out := cfg.Client.Solve(runCtx, *j.p)
				for range cfg.Retry {
					wait, ok := resendAfter(out)
					if !ok || runCtx.Err() != nil {
						break
					}
					rec.Resent(out.Kind)
					if wait > 0 {
						cfg.Client.wait(runCtx, wait)
					}
					out = cfg.Client.Solve(runCtx, *j.p)
				}
				lat := time.Since(j.due)
				rec.Done(out.Kind, out.Received, lat)
				queued.Add(-1)
				report(Sample{Due: j.due.Sub(start), Latency: lat, Sent: true, Outcome: out})
			}
		})
	}

	stopTicks := startTicker(rec, start, cfg.Progress)

	// The schedule: sleep until each request is due, but never let a late
	// wake-up move the due times (they stay start + i/burst*interval).
	timer := time.NewTimer(time.Until(start))
	end := start.Add(cfg.Duration)
schedule:
	for i := range total {
		due := start.Add(time.Duration(i/burst) * interval)
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-cfg.Stop:
				end = time.Now()
				break schedule
			case <-runCtx.Done():
				break schedule
			}
		}
		select {
		case <-cfg.Stop:
			end = time.Now()
			break schedule
		default:
		}
		rec.Due()
		rec.Late(time.Since(due)) // this process's own delay, part of the latency
		if cfg.MaxInFlight > 0 && queued.Load() >= int64(cfg.MaxInFlight) {
			unsent(due)
			continue
		}
		queued.Add(1)
		ps := cfg.Puzzles
		if len(cfg.Then) > 0 && due.Sub(start) >= cfg.ThenAt {
			ps = cfg.Then
		}
		select {
		case jobs <- job{p: &ps[i%len(ps)], due: due}:
		case <-runCtx.Done():
			queued.Add(-1)
			unsent(due)
			break schedule
		}
	}
	timer.Stop()
	close(jobs)
	wg.Wait()
	stopTicks(time.Now())

	res := &Result{Mode: "load", Start: start, Target: cfg.Target, Connections: cfg.Conns, Rate: cfg.Rate}
	// The rate achieved over the scheduled window, answers that arrive in
	// the grace period included.
	return finish(ctx, rec, res, end.Sub(start))
}

// resendAfter reports whether a request that got out is worth sending
// again (a 429 or 503, or no answer at all) and after how long: the busy
// answer's Retry-After, at once after none.
func resendAfter(out Outcome) (time.Duration, bool) {
	switch {
	case out.Kind == KindBusy || out.Status == http.StatusTooManyRequests:
		return parseRetryAfter(out.RetryAfter), true
	case !out.Received:
		return 0, true
	}
	return 0, false
}

// Background runs Load in its own goroutine until the returned stop is
// called (or cfg.Duration passes); stop ends the schedule, waits for the
// requests sent and returns Load's result.
func Background(ctx context.Context, cfg LoadConfig) (stop func() (*Result, error)) {
	ch := make(chan struct{})
	cfg.Stop = ch
	type out struct {
		res *Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := Load(ctx, cfg)
		done <- out{res, err}
	}()
	return func() (*Result, error) {
		close(ch)
		o := <-done
		return o.res, o.err
	}
}

// finish fills res from rec over a run of d and reports an interrupted
// run, whose figures are still in res.
func finish(ctx context.Context, rec *recorder, res *Result, d time.Duration) (*Result, error) {
	rec.Fill(res)
	res.DurationS = d.Seconds()
	res.Throughput = float64(res.OK) / res.DurationS
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("%s run interrupted: %w", res.Mode, err)
	}
	return res, nil
}

// startTicker calls rec.Tick every second from start and hands each tick to
// progress. The returned function stops it and records the last partial
// second.
func startTicker(rec *recorder, start time.Time, progress func(Tick)) func(time.Time) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	tick := func() {
		tk := rec.Tick()
		if progress != nil {
			progress(tk)
		}
	}
	go func() {
		defer close(stopped)
		next := start.Add(time.Second)
		t := time.NewTimer(time.Until(next))
		defer t.Stop()
		for {
			select {
			case <-t.C:
				tick()
				next = next.Add(time.Second)
				t.Reset(time.Until(next))
			case <-done:
				return
			}
		}
	}()
	return func(end time.Time) {
		close(done)
		<-stopped
		if end.Sub(start)%time.Second > 100*time.Millisecond || rec.ticks() == 0 {
			tick()
		}
	}
}
