package main

import (
	"context"
	"time"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/cmd/sudoku-load/load"
)

func setupLoad(fs *cli.FlagSet, c *common) func(context.Context) (*load.Result, error) {
	fs.IntVar(&c.conns, "c", 32, "connections (requests in flight at once)")
	fs.Float64Var(&c.rate, "rate", 1000, "requests per second, evenly spaced")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to send")
	c.latencyThresholds(fs)
	return func(ctx context.Context) (*load.Result, error) {
		positive := map[string]float64{"c": float64(c.conns), "rate": c.rate, "duration": c.duration.Seconds()}
		return c.withClient(positive, func(cl *load.Client) (*load.Result, error) {
			return load.Load(ctx, c.loadConfig(cl))
		})
	}
}
