package load

import (
	"context"
	"math"
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
	}{
		{"knee above start", 500, 3000, 1e6, 3000 * 0.95, 3000, 12, true},
		{"knee below start", 4000, 700, 1e6, 700 * 0.95, 700, 14, true},
		{"never fails", 500, math.Inf(1), 8000, 8000, 8000, 6, false},
		{"always fails", 500, 0, 1e6, 0, 0, 7, true}, // 500 250 125 63 32 16 8
	} {
		t.Run(tc.name, func(t *testing.T) {
			var steps []Step
			res, err := FindCapacity(context.Background(), CapacityConfig{
				Load: LoadConfig{Rate: tc.start}, SLO: 5 * time.Millisecond, MaxRate: tc.maxRate,
				Cores: 2, Peak: 1e6, Cool: time.Nanosecond, MaxSteps: 16, runLoad: fakeRun(tc.knee),
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
			if c.Rate == 0 {
				if c.CoresForPeak != 0 || c.Steps[len(c.Steps)-1].Rate != 8 {
					t.Errorf("no capacity: cores for peak %d, last step %+v; want 0 and the search ended at 8/s", c.CoresForPeak, c.Steps[len(c.Steps)-1])
				}
				return
			}
			if c.PerCore != c.Rate/2 || c.CoresForPeak != int(math.Ceil(1e6/c.PerCore)) {
				t.Errorf("per core %.1f, cores for peak %d; want rate/2 and ceil(1e6/per core)", c.PerCore, c.CoresForPeak)
			}
			if res.Mode != "capacity" || res.Rate != c.Rate {
				t.Errorf("result mode %q rate %.0f, want capacity and the best passing step's rate %.0f", res.Mode, res.Rate, c.Rate)
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
