package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/cmd/sudoku-load/load"
)

const capacityHelp = `The capacity is the highest rate whose step passed: p99 <= -p99, at least 95% of
the asked rate achieved, no wrong answer and at most -max-errors failed. When the
search stops before it has narrowed the capacity to -precision (at -max-rate, or
out of -steps), it says "at least N requests/s" and the JSON has "at_least": true.

With -peak it prints a capacity plan. Its headroom rule: each core runs at most
-utilisation (70%) of its measured rate at the peak, and there are -spare (1)
machines more than the peak needs, so the peak survives that many failures:
  per core  = capacity / -cores
  cores     = ceil(peak / (per core x -utilisation))
  machines  = ceil(cores / -machine-cores) + -spare`

func setupCapacity(fs *cli.FlagSet, c *common) func(context.Context) (*load.Result, error) {
	var (
		slo                   time.Duration
		maxRate, minRate      float64
		prec, maxErr          float64
		plan                  load.PlanConfig
		cores, steps, retries int
		repeat                int
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
	fs.IntVar(&retries, "retries", 1, "runs again a failed rate's steps this often before the rate counts as failed")
	fs.IntVar(&repeat, "repeat", 1, "steps that judge each rate: it passes when most of them pass (the median step)")
	fs.IntVar(&cores, "cores", runtime.NumCPU(), "cores the measured stack used, for the rate per core")
	fs.Float64Var(&plan.Peak, "peak", 0, "peak rate to plan for, requests/s: print the cores and machines it needs (0: no plan)")
	fs.Float64Var(&plan.Utilisation, "utilisation", 0.7, "plan: the share of each core's measured rate used at the peak")
	fs.IntVar(&plan.MachineCores, "machine-cores", 8, "plan: cores per machine")
	fs.IntVar(&plan.Spare, "spare", 1, "plan: machines beyond those the peak needs, so that this many can fail")
	return func(ctx context.Context) (*load.Result, error) {
		positive := map[string]float64{"c": float64(c.conns), "rate": c.rate, "duration": c.duration.Seconds(),
			"p99": slo.Seconds(), "max-rate": maxRate, "cores": float64(cores), "steps": float64(steps),
			"utilisation": plan.Utilisation, "machine-cores": float64(plan.MachineCores), "repeat": float64(repeat)}
		if plan.Utilisation > 1 || plan.Spare < 0 {
			return nil, &cli.UsageError{Err: fmt.Errorf("-utilisation must be at most 1 and -spare at least 0, got %g and %d", plan.Utilisation, plan.Spare)}
		}
		return c.withClient(positive, func(cl *load.Client) (*load.Result, error) {
			return load.FindCapacity(ctx, load.CapacityConfig{Load: c.loadConfig(cl), SLO: slo, MaxRate: maxRate, MinRate: minRate,
				Precision: prec, MaxErrorRatio: maxErr, MaxSteps: steps, Retries: retries, Repeat: repeat, Cores: cores, Plan: plan,
				OnStep: func(s load.Step) {
					c.log.Info().Float64("rate", s.Rate).Float64("achieved", s.Achieved).Float64("p99_ms", s.P99ms).Float64("lag_p99_ms", s.LagP99ms).
						Float64("error_ratio", s.ErrorRatio).Bool("pass", s.Pass).Str("why", s.Why).Msg("capacity step")
				}})
		})
	}
}
