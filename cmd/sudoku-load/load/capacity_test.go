package load

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// fakeRun stands in for Load: below knee requests/s the server keeps p99 at
// 1 ms, above it p99 is 20 ms.
func fakeRun(knee float64) func(context.Context, LoadConfig) (*Result, error) {
	return func(_ context.Context, lc LoadConfig) (*Result, error) {
		n := int64(lc.Rate)
		r := &Result{Mode: "load", Rate: lc.Rate, Sent: n, Received: n, OK: n, Throughput: lc.Rate,
			Errors: map[string]int64{}, Latency: Latency{P50: 0.5, P99: 1}}
		if lc.Rate > knee {
			r.Latency.P99 = 20
		}
		return r, nil
	}
}

func TestFindCapacitySearch(t *testing.T) {
	for _, tc := range []struct {
		name            string
		start, knee     float64
		maxRate         float64
		wantLo, wantHi  float64
		wantStepsBelow  int
		wantFailedSteps bool
		wantStop        string
		wantAtLeast     bool
	}{
		{"knee above start", 500, 3000, 1e6, 3000 * 0.95, 3000, 12, true, stopPrecision, false},
		{"knee below start", 4000, 700, 1e6, 700 * 0.95, 700, 14, true, stopPrecision, false},
		{"never fails", 500, math.Inf(1), 8000, 8000, 8000, 6, false, stopMaxRate, true},
		{"always fails", 500, 0, 1e6, 0, 0, 7, true, stopMinRate, false}, // 500 250 125 63 32 16 8
	} {
		t.Run(tc.name, func(t *testing.T) {
			var steps []Step
			res, err := FindCapacity(context.Background(), CapacityConfig{
				Load: LoadConfig{Rate: tc.start}, SLO: 5 * time.Millisecond, MaxRate: tc.maxRate,
				Cores: 2, Plan: PlanConfig{Peak: 1e6}, Cool: time.Nanosecond, MaxSteps: 16, runLoad: fakeRun(tc.knee),
				OnStep: func(s Step) { steps = append(steps, s) },
			})
			if err != nil {
				t.Fatalf("FindCapacity: %v", err)
			}
			c := res.Capacity
			if c.Rate < tc.wantLo || c.Rate > tc.wantHi {
				t.Errorf("capacity = %.0f, want %.0f..%.0f; steps %+v", c.Rate, tc.wantLo, tc.wantHi, c.Steps)
			}
			if len(c.Steps) > tc.wantStepsBelow || len(steps) != len(c.Steps) {
				t.Errorf("%d steps (%d reported), want at most %d", len(c.Steps), len(steps), tc.wantStepsBelow)
			}
			if c.Stop != tc.wantStop || c.AtLeast != tc.wantAtLeast || (c.FailedRate > 0) != tc.wantFailedSteps {
				t.Errorf("stop %q, at least %v, failed rate %.0f; want %q, %v, a failed rate %v", c.Stop, c.AtLeast, c.FailedRate, tc.wantStop, tc.wantAtLeast, tc.wantFailedSteps)
			}
			if c.FailedRate > 0 && c.FailedRate <= c.Rate {
				t.Errorf("failed rate %.0f <= capacity %.0f", c.FailedRate, c.Rate)
			}
			if c.Rate == 0 {
				if c.Plan != nil || c.Steps[len(c.Steps)-1].Rate != 8 {
					t.Errorf("no capacity: plan %+v, last step %+v; want no plan and the search ended at 8/s", c.Plan, c.Steps[len(c.Steps)-1])
				}
				return
			}
			if c.PerCore != c.Rate/2 || c.Plan == nil || c.Plan.Cores != int(math.Ceil(1e6/(0.7*c.PerCore))) || c.Plan.AtLeast != c.AtLeast {
				t.Errorf("per core %.1f, plan %+v; want rate/2 and ceil(1e6/(0.7 x per core)) cores", c.PerCore, c.Plan)
			}
			if res.Mode != "capacity" || res.Rate != c.Rate {
				t.Errorf("result mode %q rate %.0f, want capacity and the best passing step's rate %.0f", res.Mode, res.Rate, c.Rate)
			}
		})
	}
}

// A search that runs out of steps before any step failed, or before it
// narrowed the capacity, reports the highest passing rate as a lower bound.
func TestFindCapacityOutOfSteps(t *testing.T) {
	for _, tc := range []struct {
		name       string
		knee       float64
		steps      int
		want, fail float64
	}{
		{"while doubling", math.Inf(1), 3, 2000, 0}, // 500 1000 2000
		{"while bisecting", 3000, 5, 3000, 4000},    // 500 1000 2000 4000x 3000
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := FindCapacity(context.Background(), CapacityConfig{
				Load: LoadConfig{Rate: 500}, SLO: 5 * time.Millisecond, Cores: 1,
				Cool: time.Nanosecond, MaxSteps: tc.steps, runLoad: fakeRun(tc.knee),
			})
			if err != nil {
				t.Fatalf("FindCapacity: %v", err)
			}
			c := res.Capacity
			if c.Rate != tc.want || !c.AtLeast || c.Stop != stopSteps || c.FailedRate != tc.fail {
				t.Errorf("capacity %+v; want at least %.0f, stopped by steps, failed rate %.0f", c, tc.want, tc.fail)
			}
			var b strings.Builder
			if err := res.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("capacity  at least %.0f requests/s", tc.want); !strings.Contains(b.String(), want) {
				t.Errorf("WriteText lacks %q:\n%s", want, b.String())
			}
		})
	}
}

// A step that fails once is run again with Retries, and both attempts are
// reported.
func TestFindCapacityRetries(t *testing.T) {
	calls := 0
	flaky := func(ctx context.Context, lc LoadConfig) (*Result, error) {
		calls++
		r, err := fakeRun(1000)(ctx, lc)
		if calls == 2 { // the second run (rate 1000) is spoiled by a hiccup
			r.Latency.P99 = 50
		}
		return r, err
	}
	res, err := FindCapacity(context.Background(), CapacityConfig{
		Load: LoadConfig{Rate: 500}, SLO: 5 * time.Millisecond, MaxRate: 1000, Cores: 1,
		Cool: time.Nanosecond, Retries: 1, runLoad: flaky,
	})
	if err != nil {
		t.Fatalf("FindCapacity: %v", err)
	}
	c := res.Capacity
	if c.Rate != 1000 || len(c.Steps) != 3 || c.Steps[1].Pass || !c.Steps[2].Pass {
		t.Errorf("capacity %.0f after steps %+v; want 1000 after pass, fail, pass", c.Rate, c.Steps)
	}
}

// With Repeat 3 a rate is judged by the majority of its steps: one
// spoiled step neither fails a good rate nor passes a bad one, and a
// decided vote runs no third step.
func TestFindCapacityRepeatVotes(t *testing.T) {
	calls := map[float64]int{}
	noisy := func(ctx context.Context, lc LoadConfig) (*Result, error) {
		calls[lc.Rate]++
		r, err := fakeRun(1000)(ctx, lc)
		switch {
		case lc.Rate == 1000 && calls[lc.Rate] == 1: // a good rate, one hiccup
			r.Latency.P99 = 50
		case lc.Rate == 2000 && calls[lc.Rate] == 2: // a bad rate, one lucky step
			r.Latency.P99 = 1
		}
		return r, err
	}
	res, err := FindCapacity(context.Background(), CapacityConfig{
		Load: LoadConfig{Rate: 500}, SLO: 5 * time.Millisecond, MaxRate: 2000, Cores: 1,
		Cool: time.Nanosecond, Repeat: 3, Precision: 0.6, runLoad: noisy,
	})
	if err != nil {
		t.Fatalf("FindCapacity: %v", err)
	}
	c := res.Capacity
	if c.Rate != 1000 || c.FailedRate != 2000 {
		t.Errorf("capacity %.0f, failed at %.0f; want 1000, 2000; steps %+v", c.Rate, c.FailedRate, c.Steps)
	}
	if calls[500] != 2 || calls[1000] != 3 || calls[2000] != 3 {
		t.Errorf("steps per rate %v, want 500: 2 (decided), 1000: 3, 2000: 3", calls)
	}
}

func TestJudge(t *testing.T) {
	cfg := CapacityConfig{SLO: 5 * time.Millisecond, MaxErrorRatio: 0.01}
	ok := func() *Result {
		return &Result{Rate: 1000, Sent: 1000, OK: 1000, Throughput: 1000, Errors: map[string]int64{}, Latency: Latency{P99: 4}}
	}
	for _, tc := range []struct {
		name   string
		change func(*Result)
		pass   bool
	}{
		{"within", func(*Result) {}, true},
		{"slow", func(r *Result) { r.Latency.P99 = 6 }, false},
		{"one wrong", func(r *Result) { r.Wrong = 1; r.Errors["wrong"] = 1 }, false},
		{"few 503s", func(r *Result) { r.Errors["503_busy"] = 5 }, true},
		{"many 503s", func(r *Result) { r.Errors["503_busy"] = 50 }, false},
		{"fell behind", func(r *Result) { r.Throughput = 900 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ok()
			tc.change(r)
			if st := judge(r, cfg); st.Pass != tc.pass || (st.Pass == (st.Why != "")) {
				t.Errorf("judge(%s) = %+v, want pass=%v and a reason on failure", tc.name, st, tc.pass)
			}
		})
	}
}

// One real search, short: a fast server passes every step up to the bound.
func TestFindCapacityAgainstServer(t *testing.T) {
	ps, sols := testPuzzles(t)
	url := newFake(t, &fake{sols: sols})
	res, err := FindCapacity(context.Background(), CapacityConfig{
		Load: LoadConfig{Client: newClient(t, url, 8, time.Second, false), Puzzles: ps, Target: url,
			Conns: 8, Rate: 100, Duration: 200 * time.Millisecond},
		// A generous objective and retries: the machine may be busy.
		SLO: 2 * time.Second, MaxRate: 200, Cores: 1, Cool: 10 * time.Millisecond, Retries: 2,
	})
	if err != nil {
		t.Fatalf("FindCapacity: %v", err)
	}
	if res.Capacity.Rate != 200 || !res.Capacity.Steps[len(res.Capacity.Steps)-1].Pass {
		t.Errorf("capacity %.0f after steps %+v, want 200 after a passing step at 200", res.Capacity.Rate, res.Capacity.Steps)
	}
}
