package load

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// LoadConfig configures Load.
type LoadConfig struct {
	Client  *Client
	Puzzles []Puzzle
	// Target names the server in the result.
	Target string
	// Conns is the number of requests that may be in flight at once (and
	// of connections).
	Conns int
	// Rate is the fixed request rate, requests/s; requests are evenly
	// spaced at 1/Rate.
	Rate float64
	// Duration is how long requests are scheduled for.
	Duration time.Duration
	// Grace bounds how long to wait for answers after Duration.
	Grace time.Duration
	// Progress, if set, is called once a second with that second's figures.
	Progress func(Tick)
}

// ErrConfig is wrapped by errors about a configuration.
var ErrConfig = errors.New("load: bad configuration")

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
	if cfg.Client == nil || len(cfg.Puzzles) == 0 || cfg.Rate <= 0 || cfg.Duration <= 0 || cfg.Conns < 1 {
		return nil, fmt.Errorf("%w: want a client, puzzles, rate > 0, duration > 0 and conns >= 1", ErrConfig)
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 10 * time.Second
	}
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	if interval <= 0 {
		return nil, fmt.Errorf("%w: rate %.0f/s is too high", ErrConfig, cfg.Rate)
	}
	total := int(cfg.Duration / interval)
	if total < 1 {
		total = 1
	}

	// Answers must come before Duration + Grace; after that the requests
	// still out are cancelled and count as timeouts.
	start := time.Now().Add(10 * time.Millisecond)
	runCtx, cancel := context.WithDeadline(ctx, start.Add(cfg.Duration+cfg.Grace))
	defer cancel()

	rec := NewRecorder(start)
	jobs := make(chan job, min(total, 1<<16))
	var wg sync.WaitGroup
	for range cfg.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if runCtx.Err() != nil {
					rec.Unsent()
					continue
				}
				rec.Sent()
				out := cfg.Client.Solve(runCtx, *j.p)
				rec.Done(out.Kind, out.Received, time.Since(j.due))
			}
		}()
	}

	stopTicks := startTicker(rec, start, cfg.Progress)

	// The schedule: sleep until each request is due, but never let a late
	// wake-up move the due times (they stay start + i*interval).
	timer := time.NewTimer(time.Until(start))
schedule:
	for i := range total {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-runCtx.Done():
				break schedule
			}
		}
		rec.Due()
		rec.Late(time.Since(due)) // this process's own delay, part of the latency
		select {
		case jobs <- job{p: &cfg.Puzzles[i%len(cfg.Puzzles)], due: due}:
		case <-runCtx.Done():
			rec.Unsent()
			break schedule
		}
	}
	timer.Stop()
	close(jobs)
	wg.Wait()
	end := time.Now()
	stopTicks(end)

	res := &Result{Mode: "load", Target: cfg.Target, Connections: cfg.Conns, Rate: cfg.Rate}
	rec.Fill(res)
	// The rate achieved over the scheduled window, answers that arrive in
	// the grace period included.
	res.DurationS = cfg.Duration.Seconds()
	res.Throughput = float64(res.OK) / res.DurationS
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("load run interrupted: %w", err)
	}
	return res, nil
}

// startTicker calls rec.Tick every second from start and hands each tick to
// progress. The returned function stops it and records the last partial
// second.
func startTicker(rec *Recorder, start time.Time, progress func(Tick)) func(time.Time) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		next := start.Add(time.Second)
		t := time.NewTimer(time.Until(next))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				tk := rec.Tick()
				if progress != nil {
					progress(tk)
				}
				next = next.Add(time.Second)
				t.Reset(time.Until(next))
			}
		}
	}()
	return func(end time.Time) {
		close(done)
		<-stopped
		if end.Sub(start)%time.Second > 100*time.Millisecond || rec.ticks() == 0 {
			tk := rec.Tick()
			if progress != nil {
				progress(tk)
			}
		}
	}
}
