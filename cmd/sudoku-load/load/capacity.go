package load

import (
	"context"
	"fmt"
	"math"
	"time"
)

// CapacityConfig configures Capacity.
type CapacityConfig struct {
	// Load is the template of every step; its Rate is the starting rate
	// and its Duration the length of each step.
	Load LoadConfig
	// SLO is the p99 objective.
	SLO time.Duration
	// MaxRate bounds the search (0: 1,000,000 requests/s).
	MaxRate float64
	// MinRate ends the search when a rate this low fails: the capacity is
	// then reported as 0 (0: 10 requests/s).
	MinRate float64
	// Precision ends the bisection once (high-low)/high is below it
	// (0: 0.05).
	Precision float64
	// MaxErrorRatio is the share of errors a passing step may have
	// (0: none at all). Wrong answers always fail a step.
	MaxErrorRatio float64
	// MaxSteps bounds the number of load runs (0: 16).
	MaxSteps int
	// Retries is how often a failed step is run again before the rate
	// counts as failed: on a shared machine one descheduling of the server
	// can spoil the p99 of a short step. Every attempt is reported.
	Retries int
	// Repeat is how many steps judge one rate (0: 1): the rate passes when
	// most of them pass, as the median step does, so that one step spoiled
	// by the machine's noise neither passes nor fails a rate on its own.
	// Retries then run the whole vote again.
	Repeat int
	// Cool is the pause between steps, to let the server drain (0: 1s).
	Cool time.Duration
	// Cores is the number of cores serving, for the rate per core.
	Cores int
	// Plan, if its Peak is > 0, adds a capacity plan for that peak to the
	// result (see newPlan).
	Plan PlanConfig
	// OnStep, if set, is called after every step.
	OnStep func(Step)

	// runLoad replaces Load in tests of the search.
	runLoad func(context.Context, LoadConfig) (*Result, error)
}

// Step is one load run of the search.
type Step struct {
	Rate       float64 `json:"rate"`
	Achieved   float64 `json:"achieved"` // verified answers/s
	P50ms      float64 `json:"p50_ms"`
	P99ms      float64 `json:"p99_ms"`
	ErrorRatio float64 `json:"error_ratio"`
	// LagP99ms is the p99 of this process's own sending delay (see
	// Result.ScheduleLag): when it is near P99ms, the client was starved.
	LagP99ms float64 `json:"lag_p99_ms"`
	Pass     bool    `json:"pass"`
	Why      string  `json:"why"` // why a step failed; empty on a pass
}

// Capacity is the capacity-only part of a Result.
type Capacity struct {
	SLOms float64 `json:"slo_p99_ms"`
	Rate  float64 `json:"rate"` // the highest passing rate, requests/s
	// AtLeast says that Rate is only a lower bound: the search passed Rate
	// but stopped before it had narrowed the capacity to Precision, at
	// MaxRate, out of steps or interrupted.
	AtLeast bool `json:"at_least"`
	// FailedRate is the lowest rate that failed (0: none failed); the
	// capacity lies below it.
	FailedRate float64 `json:"failed_rate"`
	// Stop is why the search ended: stopPrecision, stopMinRate,
	// stopMaxRate, stopSteps or stopInterrupted.
	Stop    string  `json:"stop"`
	Cores   int     `json:"cores"`
	PerCore float64 `json:"per_core"`
	Plan    *Plan   `json:"plan"` // null without a peak
	Steps   []Step  `json:"steps"`
}

// Why a capacity search ended.
const (
	stopPrecision   = "precision"   // the capacity is known to within Precision
	stopMinRate     = "min-rate"    // a rate at or below MinRate failed: no capacity
	stopMaxRate     = "max-rate"    // MaxRate passed: the capacity is at least MaxRate
	stopSteps       = "steps"       // MaxSteps ran out
	stopInterrupted = "interrupted" // a run failed or the context ended
)

// FindCapacity finds the highest rate whose p99 stays within SLO: it doubles the
// rate from Load.Rate until a rate fails, then bisects between the last pass
// and the first failure; Repeat steps judge each rate. A step passes when p99 <= SLO, the achieved rate is
// at least 95% of the asked rate, no answer is wrong and the error ratio is
// within MaxErrorRatio. The Result's main figures are those of the best
// passing step (or of the last step when none passed); its Capacity says
// whether the rate found is only a lower bound.
func FindCapacity(ctx context.Context, cfg CapacityConfig) (*Result, error) {
	if cfg.SLO <= 0 || cfg.Load.Rate <= 0 {
		return nil, fmt.Errorf("%w: capacity needs an SLO > 0 and a starting rate > 0", errConfig)
	}
	if cfg.MaxRate <= 0 {
		cfg.MaxRate = 1e6
	}
	if cfg.MinRate <= 0 {
		cfg.MinRate = 10
	}
	if cfg.Precision <= 0 {
		cfg.Precision = 0.05
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 16
	}
	if cfg.Cool <= 0 {
		cfg.Cool = time.Second
	}
	if cfg.Cores < 1 {
		cfg.Cores = 1
	}
	if cfg.Repeat < 1 {
		cfg.Repeat = 1
	}
	c := &Capacity{SLOms: float64(cfg.SLO) / 1e6, Cores: cfg.Cores, Stop: stopSteps}
	var best, last *Result
	run := func(rate float64) (bool, error) {
		if len(c.Steps) > 0 {
			select {
			case <-time.After(cfg.Cool):
			case <-ctx.Done():
				return false, ctx.Err()
			}
		}
		lc := cfg.Load
		lc.Rate = rate
		runLoad := cfg.runLoad
		if runLoad == nil {
			runLoad = Load
		}
		res, err := runLoad(ctx, lc)
		if err != nil {
			return false, err
		}
		st := judge(res, cfg)
		c.Steps = append(c.Steps, st)
		if cfg.OnStep != nil {
			cfg.OnStep(st)
		}
		last = res
		if st.Pass && (best == nil || rate > best.Rate) {
			best = res
		}
		return st.Pass, nil
	}

	// vote runs Repeat steps at rate and passes it when most of them pass.
	vote := func(rate float64) (bool, error) {
		passed := 0
		for i := 0; i < cfg.Repeat; i++ {
			pass, err := run(rate)
			if err != nil {
				return false, err
			}
			if pass {
				passed++
			}
			if 2*passed > cfg.Repeat || 2*(i+1-passed) >= cfg.Repeat+1 {
				break // the majority is decided
			}
		}
		return 2*passed > cfg.Repeat, nil
	}

	lo, hi := 0.0, math.Inf(1)
	rate := min(cfg.Load.Rate, cfg.MaxRate)
	var err error
	for len(c.Steps) < cfg.MaxSteps {
		var pass bool
		pass, err = vote(rate)
		for try := 0; err == nil && !pass && try < cfg.Retries && len(c.Steps) < cfg.MaxSteps; try++ {
			pass, err = vote(rate)
		}
		if err != nil {
			c.Stop = stopInterrupted
			break
		}
		if pass {
			lo = rate
		} else {
			hi = rate
		}
		switch {
		case !pass && rate <= cfg.MinRate:
			c.Stop = stopMinRate // even the lowest rate fails
		case pass && math.IsInf(hi, 1) && rate >= cfg.MaxRate:
			c.Stop = stopMaxRate
		case math.IsInf(hi, 1):
			rate = min(2*rate, cfg.MaxRate)
			continue
		case (hi-lo)/hi > cfg.Precision:
			rate = math.Round((lo + hi) / 2)
			if rate > lo && rate < hi {
				continue
			}
			c.Stop = stopPrecision // whole requests/s cannot narrow it further
		default:
			c.Stop = stopPrecision
		}
		break
	}

	res := best
	if res == nil {
		res = last
	}
	if res == nil {
		return nil, err
	}
	out := *res
	out.Mode = "capacity"
	c.Rate = lo
	c.AtLeast = lo > 0 && c.Stop != stopPrecision && c.Stop != stopMinRate
	if !math.IsInf(hi, 1) {
		c.FailedRate = hi
	}
	c.PerCore = lo / float64(cfg.Cores)
	if cfg.Plan.Peak > 0 {
		c.Plan = newPlan(c, cfg.Plan)
	}
	out.Capacity = c
	return &out, err
}

func judge(res *Result, cfg CapacityConfig) Step {
	st := Step{Rate: res.Rate, Achieved: res.Throughput, P50ms: res.Latency.P50, P99ms: res.Latency.P99, ErrorRatio: res.ErrorRatio()}
	if res.ScheduleLag != nil {
		st.LagP99ms = res.ScheduleLag.P99
	}
	slo := float64(cfg.SLO) / 1e6
	switch {
	case res.Wrong > 0:
		st.Why = fmt.Sprintf("%d wrong answers", res.Wrong)
	case st.ErrorRatio > cfg.MaxErrorRatio:
		st.Why = fmt.Sprintf("error ratio %.4f > %.4f", st.ErrorRatio, cfg.MaxErrorRatio)
	case st.P99ms > slo:
		st.Why = fmt.Sprintf("p99 %.3fms > %.3fms", st.P99ms, slo)
	case st.Achieved < 0.95*res.Rate:
		st.Why = fmt.Sprintf("achieved %.0f/s < 95%% of %.0f/s", st.Achieved, res.Rate)
	default:
		st.Pass = true
	}
	return st
}
