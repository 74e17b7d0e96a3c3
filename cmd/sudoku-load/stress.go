package main

import (
	"context"
	"errors"
	"time"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/cmd/sudoku-load/load"
)

func setupStress(fs *cli.FlagSet, c *common) func(context.Context) (*load.Result, error) {
	var noRead bool
	var count, depth int
	fs.IntVar(&c.conns, "c", 8, "raw TCP connections")
	fs.IntVar(&count, "n", 100000, "requests to write over all connections (a bound)")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to write at most (a bound; -timeout more to read the last answers)")
	fs.BoolVar(&noRead, "no-read", false, "never read the responses; keep the connections open until -duration ends")
	fs.IntVar(&depth, "depth", 256, "requests written but not yet answered per connection, when reading")
	c.latencyThresholds(fs)
	return func(ctx context.Context) (*load.Result, error) {
		if noRead && c.thresholds.MaxP99 > 0 {
			return nil, &cli.UsageError{Err: errors.New("-max-p99 needs answers: it cannot be used with -no-read")}
		}
		if err := checkPositive(map[string]float64{"c": float64(c.conns), "n": float64(count), "duration": c.duration.Seconds()}); err != nil {
			return nil, err
		}
		return load.Stress(ctx, load.StressConfig{URL: c.url, Puzzles: c.puzzles, Conns: c.conns, Count: count,
			Duration: c.duration, Grace: c.timeout, Depth: depth, NoRead: noRead, Text: c.text, Progress: c.progressFunc()})
	}
}
