package main

import (
	"context"
	"runtime"
	"time"

	"sudoku-fcgi/cmd/sudoku-load/load"
)

func setupCapacity(f *envFlags, c *common) func(context.Context) (*load.Result, error) {
	var (
		slo                   time.Duration
		maxRate, minRate      float64
		prec, maxErr          float64
		peak                  float64
		cores, steps, retries int
	)
	f.Int(&c.conns, "c", 64, "connections (requests in flight at once)")
	f.Float(&c.rate, "rate", 500, "starting rate, requests/s (doubled until a step fails)")
	f.Duration(&c.duration, "duration", 5*time.Second, "length of each step")
	f.Duration(&slo, "p99", 5*time.Millisecond, "p99 objective")
	f.Float(&maxRate, "max-rate", 200000, "highest rate to try")
	f.Float(&minRate, "min-rate", 10, "stop when a rate this low fails (the capacity is then 0)")
	f.Float(&prec, "precision", 0.05, "stop bisecting when (high-low)/high is below this")
	f.Float(&maxErr, "max-errors", 0.001, "share of errors (503s included) a passing step may have")
	f.Int(&steps, "steps", 20, "most load runs")
	f.Int(&retries, "retries", 1, "runs again a failed step this often before the rate counts as failed")
	f.Int(&cores, "cores", runtime.NumCPU(), "cores serving, for the rate per core")
	f.Float(&peak, "peak", 0, "planned peak rate: report the cores it needs (0: none)")
	return func(ctx context.Context) (*load.Result, error) {
		for name, v := range map[string]float64{"c": float64(c.conns), "rate": c.rate, "duration": c.duration.Seconds(),
			"p99": slo.Seconds(), "max-rate": maxRate, "cores": float64(cores), "steps": float64(steps)} {
			if err := positive(name, v); err != nil {
				return nil, err
			}
		}
		cl, err := c.client()
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		lc := load.LoadConfig{Client: cl, Puzzles: c.puzzles, Target: c.url, Conns: c.conns,
			Rate: c.rate, Duration: c.duration, Grace: c.timeout, Progress: c.progressFunc()}
		return load.FindCapacity(ctx, load.CapacityConfig{Load: lc, SLO: slo, MaxRate: maxRate, MinRate: minRate, Precision: prec,
			MaxErrorRatio: maxErr, MaxSteps: steps, Retries: retries, Cores: cores, Peak: peak,
			OnStep: func(s load.Step) {
				c.log.Info().Float64("rate", s.Rate).Float64("achieved", s.Achieved).Float64("p99_ms", s.P99ms).Float64("lag_p99_ms", s.LagP99ms).
					Float64("error_ratio", s.ErrorRatio).Bool("pass", s.Pass).Str("why", s.Why).Msg("capacity step")
			}})
	}
}
