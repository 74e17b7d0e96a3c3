package main

import (
	"context"
	"runtime"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/cmd/sudoku-load/load"
)

func setupLocal(fs *cli.FlagSet, c *common) func(context.Context) (*load.Result, error) {
	var count, limit int
	fs.IntVar(&c.conns, "c", runtime.GOMAXPROCS(0), "goroutines solving at once")
	fs.IntVar(&count, "n", 0, "puzzles to solve, going round the file (0: the file once)")
	fs.DurationVar(&c.duration, "duration", 0, "stop after this long (0: when -n is done)")
	fs.IntVar(&limit, "limit", 1, "solution limit passed to the solver (1 as the service by default; 2 also proves uniqueness, as ?unique=1)")
	return func(ctx context.Context) (*load.Result, error) {
		if err := checkPositive(map[string]float64{"c": float64(c.conns)}); err != nil {
			return nil, err
		}
		return load.Local(ctx, load.LocalConfig{Puzzles: c.puzzles, Workers: c.conns, Count: count,
			Duration: c.duration, Limit: limit, Progress: c.progressFunc()})
	}
}
