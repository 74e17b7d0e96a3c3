package load

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"sudoku-fcgi/solver"
)

// LocalConfig configures Local.
type LocalConfig struct {
	Puzzles []Puzzle
	// Workers is the number of goroutines solving at once.
	Workers int
	// Count is the number of puzzles to solve (0: len(Puzzles)), going
	// round the file as often as needed.
	Count int
	// Duration, if > 0, ends the run early.
	Duration time.Duration
	// Limit is passed to solver.Solve (2 also proves uniqueness, as a
	// server that reports it must).
	Limit int
	// Progress, if set, is called once a second.
	Progress func(Tick)
}

// LocalStats are the local-only figures of a Result.
type LocalStats struct {
	Workers int     `json:"workers"`
	Cores   int     `json:"cores"`    // min(Workers, GOMAXPROCS)
	PerCore float64 `json:"per_core"` // puzzles/s per core
	Limit   int     `json:"limit"`
}

// Local solves puzzles in this process with Workers goroutines and checks
// every solution: the baseline for the served modes.
func Local(ctx context.Context, cfg LocalConfig) (*Result, error) {
	if len(cfg.Puzzles) == 0 || cfg.Workers < 1 {
		return nil, fmt.Errorf("%w: want puzzles and workers >= 1", errConfig)
	}
	if cfg.Count <= 0 {
		cfg.Count = len(cfg.Puzzles)
	}
	if cfg.Limit < 1 {
		cfg.Limit = 1
	}
	runCtx := ctx
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	start := time.Now()
	rec := newRecorder(start)
	stopTicks := startTicker(rec, start, cfg.Progress)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Go(func() {
			for runCtx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= cfg.Count {
					return
				}
				p := &cfg.Puzzles[i%len(cfg.Puzzles)]
				rec.Due()
				rec.Sent()
				t0 := time.Now()
				r := solver.Solve(p.Grid, cfg.Limit)
				lat := time.Since(t0)
				switch {
				case r.Count == 0:
					rec.Done(Kind4xx, true, lat) // as the server's 422
				case verify(p.Grid, r.Solution.String()) != nil:
					rec.Done(KindWrong, true, lat)
				default:
					rec.Done(KindOK, true, lat)
				}
			}
		})
	}
	wg.Wait()
	end := time.Now()
	stopTicks(end)

	res, err := finish(ctx, rec, &Result{Mode: "local", Target: "in-process solver", Connections: cfg.Workers}, end.Sub(start))
	cores := min(cfg.Workers, runtime.GOMAXPROCS(0))
	res.Local = &LocalStats{Workers: cfg.Workers, Cores: cores, PerCore: res.Throughput / float64(cores), Limit: cfg.Limit}
	return res, err
}
