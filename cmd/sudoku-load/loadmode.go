package main

import (
	"context"
	"time"

	"sudoku-fcgi/cmd/sudoku-load/load"
)

func setupLoad(f *envFlags, c *common) func(context.Context) (*load.Result, error) {
	f.Int(&c.conns, "c", 32, "connections (requests in flight at once)")
	f.Float(&c.rate, "rate", 1000, "requests per second, evenly spaced")
	f.Duration(&c.duration, "duration", 10*time.Second, "how long to send")
	return func(ctx context.Context) (*load.Result, error) {
		for name, v := range map[string]float64{"c": float64(c.conns), "rate": c.rate, "duration": c.duration.Seconds()} {
			if err := positive(name, v); err != nil {
				return nil, err
			}
		}
		cl, err := c.client()
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		return load.Load(ctx, load.LoadConfig{Client: cl, Puzzles: c.puzzles, Target: c.url, Conns: c.conns,
			Rate: c.rate, Duration: c.duration, Grace: c.timeout, Progress: c.progressFunc()})
	}
}
