package main

import (
	"context"
	"time"

	"sudoku-fcgi/cmd/sudoku-load/load"
)

func setupStress(f *envFlags, c *common) func(context.Context) (*load.Result, error) {
	var count, depth int
	var noRead bool
	f.Int(&c.conns, "c", 8, "raw TCP connections")
	f.Int(&count, "n", 100000, "requests to write over all connections (a bound)")
	f.Duration(&c.duration, "duration", 10*time.Second, "how long to write at most (a bound; -timeout more to read the last answers)")
	f.Bool(&noRead, "no-read", false, "never read the responses; keep the connections open until -duration ends")
	f.Int(&depth, "depth", 256, "requests written but not yet answered per connection, when reading")
	return func(ctx context.Context) (*load.Result, error) {
		for name, v := range map[string]float64{"c": float64(c.conns), "n": float64(count), "duration": c.duration.Seconds()} {
			if err := positive(name, v); err != nil {
				return nil, err
			}
		}
		return load.Stress(ctx, load.StressConfig{URL: c.url, Puzzles: c.puzzles, Conns: c.conns, Count: count,
			Duration: c.duration, Grace: c.timeout, Depth: depth, NoRead: noRead, Text: c.text, Progress: c.progressFunc()})
	}
}
