package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/cmd/sudoku-load/load"
)

// common holds the flags every mode shares, and what run derives from them.
type common struct {
	mode     string
	url      string
	in       string
	conns    int
	rate     float64
	duration time.Duration
	timeout  time.Duration
	json     bool
	html     string
	text     bool
	progress bool
	console  bool

	// thresholds decide the exit status once the report is written.
	thresholds load.Thresholds

	log     zerolog.Logger
	puzzles []load.Puzzle
}

func newCommon(fs *cli.FlagSet, mode string) *common {
	c := &common{mode: mode}
	fs.StringVar(&c.url, "url", "http://localhost:8080", "base URL of the service (requests go to URL/sudoku); several, comma-separated, are one service's addresses: a GET that gets no answer from one goes to the next, with its share of -timeout")
	fs.StringVar(&c.in, "in", "", "puzzle file, one [id:]<81 cells> per line; - for stdin (required)")
	fs.BoolVar(&c.json, "json", false, "write the result as JSON")
	fs.StringVar(&c.html, "html", "", "also write a self-contained HTML report to this file")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "timeout of each request")
	fs.BoolVar(&c.text, "text", false, "ask for format=text answers instead of JSON")
	fs.BoolVar(&c.progress, "progress", true, "log one progress line per second to stderr")
	fs.BoolVar(&c.console, "log-console", false, "log human-readable lines instead of JSON")
	c.thresholds = load.NoThresholds
	fs.Int64Var(&c.thresholds.MaxWrong, "max-wrong", 0, "threshold: exit 3 when more answers than this are wrong (0, the default: any wrong answer; -1: no limit)")
	return c
}

// latencyThresholds defines the thresholds of a mode that measures
// latencies and errors over the network.
func (c *common) latencyThresholds(fs *cli.FlagSet) {
	fs.DurationVar(&c.thresholds.MaxP99, "max-p99", 0, "threshold: exit 3 when the p99 latency is above this (0: no limit)")
	fs.Var(ratioFlag{&c.thresholds.MaxErrorRatio}, "max-error-ratio",
		"threshold: exit 3 when the share of requests that failed (503s and wrong answers included) is above this `ratio` (unset: no limit)")
}

// ratioFlag is a share from 0 to 1; a negative value reads as unset.
type ratioFlag struct{ v *float64 }

func (r ratioFlag) String() string {
	if r.v == nil || *r.v < 0 {
		return ""
	}
	return strconv.FormatFloat(*r.v, 'g', -1, 64)
}

func (r ratioFlag) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 1 {
		return fmt.Errorf("want a share from 0 to 1, got %q", s)
	}
	*r.v = f
	return nil
}

// run reads the puzzles, runs the mode and writes its report; a broken
// threshold then fails the run with a *load.ThresholdError.
func (c *common) run(ctx context.Context, runMode func(context.Context) (*load.Result, error), stdout io.Writer) error {
	var logw io.Writer = os.Stderr
	if c.console {
		logw = zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly}
	}
	c.log = zerolog.New(logw).With().Timestamp().Str("service", name).Str("mode", c.mode).Logger()
	if err := c.readPuzzles(); err != nil {
		return err
	}
	res, runErr := runMode(ctx)
	if res == nil {
		return runErr
	}
	if err := c.write(res, stdout); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	return c.thresholds.Err(res)
}

func (c *common) readPuzzles() error {
	var r io.Reader
	switch c.in {
	case "":
		return &cli.UsageError{Err: errors.New("-in: no puzzle file given (use -in FILE, or -in - for stdin)")}
	case "-":
		r = os.Stdin
	default:
		f, err := os.Open(c.in)
		if err != nil {
			return fmt.Errorf("-in: %w", err)
		}
		defer f.Close()
		r = f
	}
	ps, err := load.ReadPuzzles(r)
	if err != nil {
		return fmt.Errorf("-in %s: %w", c.in, err)
	}
	c.puzzles = ps
	return nil
}

// withClient checks that every flag in positive is > 0, then runs f with
// an HTTP client for the flags.
func (c *common) withClient(positive map[string]float64, f func(*load.Client) (*load.Result, error)) (*load.Result, error) {
	if err := checkPositive(positive); err != nil {
		return nil, err
	}
	cl, err := load.NewClient(load.ClientConfig{URL: c.url, Conns: c.conns, Timeout: c.timeout, Text: c.text})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return f(cl)
}

// loadConfig is the configuration of a load run from the flags.
func (c *common) loadConfig(cl *load.Client) load.LoadConfig {
	return load.LoadConfig{Client: cl, Puzzles: c.puzzles, Target: c.url, Conns: c.conns,
		Rate: c.rate, Duration: c.duration, Grace: c.timeout, Progress: c.progressFunc()}
}

// progressFunc logs one line per second, or nothing without -progress.
func (c *common) progressFunc() func(load.Tick) {
	if !c.progress {
		return nil
	}
	return func(t load.Tick) {
		c.log.Info().Int("second", t.Second).Int64("sent", t.Sent).Int64("received", t.Received).
			Int64("in_flight", t.InFlight).Int64("backlog", t.Backlog).Int64("busy_503", t.Busy).
			Int64("errors", t.Errors).Float64("p50_ms", t.P50ms).Float64("p99_ms", t.P99ms).Float64("lag_p99_ms", t.LagP99ms).Msg("progress")
	}
}

func (c *common) write(res *load.Result, stdout io.Writer) error {
	if c.html != "" {
		f, err := os.Create(c.html)
		if err != nil {
			return fmt.Errorf("-html: %w", err)
		}
		title := fmt.Sprintf("%s %s: %s", name, c.mode, res.Target)
		err = res.WriteHTML(f, title, time.Now())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing HTML report: %w", err)
		}
		c.log.Info().Str("file", c.html).Msg("html report written")
	}
	if c.json {
		return res.WriteJSON(stdout)
	}
	return res.WriteText(stdout)
}

// checkPositive reports the first flag, by name, that is not > 0.
func checkPositive(flags map[string]float64) error {
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		if v := flags[name]; v <= 0 {
			return &cli.UsageError{Err: fmt.Errorf("-%s must be > 0, got %s", name, strconv.FormatFloat(v, 'f', -1, 64))}
		}
	}
	return nil
}
