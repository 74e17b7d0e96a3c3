// Command sudoku-load measures the sudoku service: an in-process baseline
// (local), a whole file at once (batch), an open-loop fixed-rate load (load),
// raw-TCP stress (stress) and a capacity search against a p99 objective
// (capacity). Every answer is checked against its puzzle.
//
//	sudoku-load load -url http://127.0.0.1:8080 -in puzzles.txt -rate 2000 -duration 30s
//
// Flags have environment twins named SUDOKU_LOAD_<FLAG>. Reports go to stdout
// (text, or JSON with -json; an HTML page with -html FILE); progress and logs
// go to stderr as zerolog JSON.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"sudoku-fcgi/cmd/sudoku-load/load"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "sudoku-load:", err)
		}
		os.Exit(1)
	}
}

// mode is one subcommand: it defines its flags on the set and returns the
// function that runs it.
type mode struct {
	summary string
	setup   func(f *envFlags, c *common) func(ctx context.Context) (*load.Result, error)
}

var modes = map[string]mode{
	"local":    {"solve a puzzle file in-process with N goroutines (the baseline)", setupLocal},
	"batch":    {"send a whole puzzle file at once (GETs, or POSTs of -b lines) and wait for all answers", setupBatch},
	"load":     {"open loop at a fixed rate, latency from each scheduled send time", setupLoad},
	"stress":   {"write pipelined requests on raw TCP as fast as possible (-no-read: never read)", setupStress},
	"capacity": {"find the highest rate whose p99 stays under -p99, by stepping and bisecting load runs", setupCapacity},
}

// common holds the flags every mode shares.
type common struct {
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

	log     zerolog.Logger
	puzzles []load.Puzzle
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: sudoku-load <mode> [flags]   (sudoku-load <mode> -h for the flags of a mode)")
	names := make([]string, 0, len(modes))
	for n := range modes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, modes[n].summary)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		usage(os.Stderr)
		if len(args) == 0 {
			return errors.New("no mode given")
		}
		return flag.ErrHelp
	}
	name := args[0]
	m, ok := modes[name]
	if !ok {
		usage(os.Stderr)
		return fmt.Errorf("unknown mode %q", name)
	}
	fs := flag.NewFlagSet("sudoku-load "+name, flag.ContinueOnError)
	f := &envFlags{fs: fs, getenv: getenv}
	c := &common{}
	f.String(&c.url, "url", "http://localhost:8080", "base URL of the service (requests go to URL/sudoku)")
	f.String(&c.in, "in", "", "puzzle file, one [id:]<81 cells> per line; - for stdin (required)")
	f.Bool(&c.json, "json", false, "write the result as JSON")
	f.String(&c.html, "html", "", "also write a self-contained HTML report to this file")
	f.Duration(&c.timeout, "timeout", 10*time.Second, "timeout of each request")
	f.Bool(&c.text, "text", false, "ask for format=text answers instead of JSON")
	f.Bool(&c.progress, "progress", true, "log one progress line per second to stderr")
	f.Bool(&c.console, "log-console", false, "log human-readable lines instead of JSON")
	runMode := m.setup(f, c)
	if err := f.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}

	var logw io.Writer = os.Stderr
	if c.console {
		logw = zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly}
	}
	c.log = zerolog.New(logw).With().Timestamp().Str("service", "sudoku-load").Str("mode", name).Logger()

	if err := c.readPuzzles(); err != nil {
		return err
	}
	res, runErr := runMode(ctx)
	if res == nil {
		return runErr
	}
	if err := c.write(res, stdout, name); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if res.Wrong > 0 {
		return fmt.Errorf("%d wrong answers", res.Wrong)
	}
	return nil
}

func (c *common) readPuzzles() error {
	var r io.Reader
	switch c.in {
	case "":
		return errors.New("-in: no puzzle file given (use -in FILE, or -in - for stdin)")
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

func (c *common) client() (*load.Client, error) {
	return load.NewClient(load.ClientConfig{URL: c.url, Conns: c.conns, Timeout: c.timeout, Text: c.text})
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

func (c *common) write(res *load.Result, stdout io.Writer, name string) error {
	if c.html != "" {
		f, err := os.Create(c.html)
		if err != nil {
			return fmt.Errorf("-html: %w", err)
		}
		title := fmt.Sprintf("sudoku-load %s: %s", name, res.Target)
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

// positive reports a flag that must be > 0.
func positive(name string, v float64) error {
	if v <= 0 {
		return fmt.Errorf("-%s must be > 0, got %s", name, strings.TrimRight(strings.TrimRight(fmt.Sprintf("%f", v), "0"), "."))
	}
	return nil
}
