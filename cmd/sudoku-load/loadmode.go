package main

import (
	"context"
	"fmt"
	"time"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/cmd/sudoku-load/load"
)

func setupLoad(fs *cli.FlagSet, c *common) func(context.Context) (*load.Result, error) {
	fs.IntVar(&c.conns, "c", 32, "connections (requests in flight at once)")
	fs.Float64Var(&c.rate, "rate", 1000, "requests per second, evenly spaced")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to send")
	retry := fs.Int("retry", 0, "send a request answered 429 or 503 (after its Retry-After) or not at all again, up to `N` times; its latency counts from its first send")
	c.latencyThresholds(fs)
	return func(ctx context.Context) (*load.Result, error) {
		if *retry < 0 {
			return nil, &cli.UsageError{Err: fmt.Errorf("-retry must be >= 0, got %d", *retry)}
		}
		positive := map[string]float64{"c": float64(c.conns), "rate": c.rate, "duration": c.duration.Seconds()}
		return c.withClient(positive, func(cl *load.Client) (*load.Result, error) {
			cfg := c.loadConfig(cl)
			cfg.Retry = *retry
			return load.Load(ctx, cfg)
		})
	}
}
