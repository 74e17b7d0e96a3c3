package main

import (
	"context"
	"fmt"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/cmd/sudoku-load/load"
)

func setupBatch(fs *cli.FlagSet, c *common) func(context.Context) (*load.Result, error) {
	size := fs.Int("b", 0, "puzzles per POST /sudoku (0: one GET per puzzle)")
	fs.IntVar(&c.conns, "c", 8, "connections (requests in flight at once)")
	retry := fs.Int("retry", 0, "send a POST's lines answered ServerTooBusy or not at all again, up to `N` times, after the Retry-After of a 429 or 503 (with -b)")
	c.latencyThresholds(fs)
	return func(ctx context.Context) (*load.Result, error) {
		if *size < 0 {
			return nil, &cli.UsageError{Err: fmt.Errorf("-b must be >= 0, got %d", *size)}
		}
		if *retry < 0 {
			return nil, &cli.UsageError{Err: fmt.Errorf("-retry must be >= 0, got %d", *retry)}
		}
		return c.withClient(map[string]float64{"c": float64(c.conns)}, func(cl *load.Client) (*load.Result, error) {
			return load.Batch(ctx, load.BatchConfig{Client: cl, Puzzles: c.puzzles, Target: c.url,
				Conns: c.conns, Size: *size, Retry: *retry, Progress: c.progressFunc()})
		})
	}
}
