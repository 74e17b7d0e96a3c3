package main

import (
	"context"
	"runtime"
	"time"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/cmd/sudoku-load/load"
)

func setupCapacity(fs *cli.FlagSet, c *common) func(context.Context) (*load.Result, error) {
	var (
		slo                   time.Duration
		maxRate, minRate      float64
		prec, maxErr          float64
		peak                  float64
		cores, steps, retries int
	)
	fs.IntVar(&c.conns, "c", 64, "connections (requests in flight at once)")
	fs.Float64Var(&c.rate, "rate", 500, "starting rate, requests/s (doubled until a step fails)")
	fs.DurationVar(&c.duration, "duration", 5*time.Second, "length of each step")
	fs.DurationVar(&slo, "p99", 5*time.Millisecond, "p99 objective")
	fs.Float64Var(&maxRate, "max-rate", 200000, "highest rate to try")
	fs.Float64Var(&minRate, "min-rate", 10, "stop when a rate this low fails (the capacity is then 0)")
	fs.Float64Var(&prec, "precision", 0.05, "stop bisecting when (high-low)/high is below this")
	fs.Float64Var(&maxErr, "max-errors", 0.001, "share of errors (503s included) a passing step may have")
	fs.IntVar(&steps, "steps", 20, "most load runs")
	fs.IntVar(&retries, "retries", 1, "runs again a failed step this often before the rate counts as failed")
	fs.IntVar(&cores, "cores", runtime.NumCPU(), "cores serving, for the rate per core")
	fs.Float64Var(&peak, "peak", 0, "planned peak rate: report the cores it needs (0: none)")
	return func(ctx context.Context) (*load.Result, error) {
		positive := map[string]float64{"c": float64(c.conns), "rate": c.rate, "duration": c.duration.Seconds(),
			"p99": slo.Seconds(), "max-rate": maxRate, "cores": float64(cores), "steps": float64(steps)}
		return c.withClient(positive, func(cl *load.Client) (*load.Result, error) {
			return load.FindCapacity(ctx, load.CapacityConfig{Load: c.loadConfig(cl), SLO: slo, MaxRate: maxRate, MinRate: minRate,
				Precision: prec, MaxErrorRatio: maxErr, MaxSteps: steps, Retries: retries, Cores: cores, Peak: peak,
				OnStep: func(s load.Step) {
					c.log.Info().Float64("rate", s.Rate).Float64("achieved", s.Achieved).Float64("p99_ms", s.P99ms).Float64("lag_p99_ms", s.LagP99ms).
						Float64("error_ratio", s.ErrorRatio).Bool("pass", s.Pass).Str("why", s.Why).Msg("capacity step")
				}})
		})
	}
}
