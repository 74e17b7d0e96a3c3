package admission

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// applier puts the rendered files in place and makes nginx load them
// (nginx -t, then a reload; the old files back when the check fails). It
// MUST honour ctx. nginx.Supervisor's applier path is the one in use.
type applier interface {
	ApplyAdmission(ctx context.Context, f includeFiles) error
}

// applierFunc adapts a function to applier.
type applierFunc func(ctx context.Context, f includeFiles) error

// ApplyAdmission calls f.
func (f applierFunc) ApplyAdmission(ctx context.Context, files includeFiles) error {
	return f(ctx, files)
}

// Loop scrapes the workers every Every, steps the controller and applies
// the includes when it decides to render. Set the fields and hand it to
// Extension, which calls start for the files nginx starts with, then run.
type Loop struct {
	Config  Config
	Scraper *Scraper
	Every   time.Duration // scrape interval; 0 means 1 s
	// StatusFile, when set, gets the rate and the estimate as JSON after
	// every step, for the page's live panel (GET /sudoku/admission).
	StatusFile string
	Metrics    *Metrics
	Log        zerolog.Logger

	apply   applier     // Extension sets it: the supervisor's check-and-reload path
	counter *LogCounter // Extension sets it; nil: nginx's counts are unknown to the law
	ctl     *controller
	lastAt  time.Time
	last    logTotals
}

// start checks the settings and returns the files for nginx's start: the
// queue off until the first figures (Config.Off or not), or the fixed rate.
func (l *Loop) start() (includeFiles, error) {
	ctl, err := newController(l.Config)
	if err != nil {
		return includeFiles{}, err
	}
	l.ctl = ctl
	if l.Metrics != nil {
		l.Metrics.floor.Set(l.Config.Floor)
	}
	return render(queueFor(l.Config.Fixed, l.Config), l.lines())
}

// run runs until ctx ends. With the controller off or a fixed rate it
// returns at once: there is nothing to follow.
func (l *Loop) run(ctx context.Context) {
	if l.Config.Off || l.Config.Fixed > 0 {
		return
	}
	every := l.Every
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	l.lastAt = time.Now()
	l.Scraper.scrape(ctx, l.lastAt) // the first scrape only sets the counters' base
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			l.step(ctx, now)
		}
	}
}

// step is one round: scrape, decide, apply.
func (l *Loop) step(ctx context.Context, now time.Time) {
	workers, failed := l.Scraper.scrape(ctx, now)
	if ctx.Err() != nil {
		return
	}
	if l.Metrics != nil && failed > 0 {
		l.Metrics.scrapeErrors.Add(float64(failed))
	}
	s := sample{At: now, Window: now.Sub(l.lastAt), Workers: workers}
	if c := l.counter; c != nil {
		s.Nginx = nginxWindow(l.last, c.totals(), s.Window)
		l.last = c.totals()
	}
	l.lastAt = now
	prev := l.ctl.Rate()
	d := l.ctl.Step(s)
	l.Metrics.decided(d, s)
	defer l.writeStatus(d)
	if !d.Render {
		return
	}
	files, err := render(queueFor(d.Rate, l.Config), l.lines())
	if err == nil {
		err = l.apply.ApplyAdmission(ctx, files)
	}
	ev := l.Log.Info()
	if err != nil {
		// nginx kept the previous files: so does the controller, and it
		// tries again after the interval.
		l.ctl.rate, d.Rate = prev, prev
		if l.Metrics != nil {
			l.Metrics.rate.Set(prev)
		}
		ev = l.Log.Error().Err(err)
	}
	ev.Float64("rate", d.Rate).Float64("previous_rate", prev).Float64("capacity", d.Capacity).
		Float64("in_flight_per_slot", d.InFlight).Bool("congested", d.Congested).Int("workers", len(workers)).
		Str("reason", string(d.Reason)).Msg("admission rate")
}

// lines are the log lines nginx sends to the counter, none without one.
func (l *Loop) lines() logLines {
	if l.counter == nil {
		return logLines{}
	}
	return l.counter.lines()
}

// nginxWindow turns two logTotals into the law's per-second figures.
func nginxWindow(prev, cur logTotals, window time.Duration) nginxCounts {
	sec := window.Seconds()
	if sec <= 0 {
		return nginxCounts{}
	}
	n := nginxCounts{Known: true, Passed: (cur.Passed - prev.Passed) / sec,
		Delayed: (cur.Delayed - prev.Delayed) / sec, Rejected: (cur.Rejected - prev.Rejected) / sec}
	if k := cur.Upstream - prev.Upstream; k > 0 {
		n.Upstream = time.Duration((cur.UpstreamSeconds - prev.UpstreamSeconds) / k * float64(time.Second))
	}
	return n
}

// writeStatus writes StatusFile atomically (a reader sees the old or the
// new content); a failure is logged once per step at debug level only:
// the page's line is a nicety.
func (l *Loop) writeStatus(d decision) {
	if l.StatusFile == "" {
		return
	}
	b, _ := json.Marshal(struct {
		Rate      float64 `json:"rate"`
		Capacity  float64 `json:"capacity"`
		Congested bool    `json:"congested"`
	}{math.Round(d.Rate), math.Round(d.Capacity), d.Congested})
	tmp := l.StatusFile + ".tmp"
	err := os.WriteFile(tmp, append(b, '\n'), 0o644)
	if err == nil {
		err = os.Rename(tmp, l.StatusFile)
	}
	if err != nil {
		l.Log.Debug().Err(err).Str("file", l.StatusFile).Msg("writing the admission status")
	}
}
