package main

import (
	"context"
	"fmt"

	"sudoku-fcgi/cmd/sudoku-load/load"
)

func setupBatch(f *envFlags, c *common) func(context.Context) (*load.Result, error) {
	var size int
	f.Int(&c.conns, "c", 8, "connections (requests in flight at once)")
	f.Int(&size, "b", 0, "puzzles per POST /sudoku (0: one GET per puzzle)")
	return func(ctx context.Context) (*load.Result, error) {
		if err := positive("c", float64(c.conns)); err != nil {
			return nil, err
		}
		if size < 0 {
			return nil, fmt.Errorf("-b must be >= 0, got %d", size)
		}
		cl, err := c.client()
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		return load.Batch(ctx, load.BatchConfig{Client: cl, Puzzles: c.puzzles, Target: c.url,
			Conns: c.conns, Size: size, Progress: c.progressFunc()})
	}
}
