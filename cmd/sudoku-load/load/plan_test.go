package load

import (
	"strings"
	"testing"
)

func TestNewPlan(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		c                            Capacity
		cfg                          PlanConfig
		planned                      float64
		cores, machines, provisioned int
	}{
		// 2000/s on 2 cores: 1000 per core, 700 at 70%; 100000/700 = 142.9
		// -> 143 cores on ceil(143/8) = 18 machines, no spare asked.
		{"defaults", Capacity{Rate: 2000, Cores: 2, PerCore: 1000}, PlanConfig{Peak: 100000}, 700, 143, 18, 144},
		{"no spare, full use", Capacity{Rate: 4000, Cores: 4, PerCore: 1000}, PlanConfig{Peak: 16000, Utilisation: 1, MachineCores: 8}, 1000, 16, 2, 16},
		{"N+2 on 4-core machines", Capacity{Rate: 500, Cores: 1, PerCore: 500}, PlanConfig{Peak: 1000, Utilisation: 0.5, MachineCores: 4, Spare: 2}, 250, 4, 3, 12},
		{"a tiny peak", Capacity{Rate: 10000, Cores: 1, PerCore: 10000}, PlanConfig{Peak: 1, Spare: 1}, 7000, 1, 2, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlan(&tc.c, tc.cfg)
			if p == nil {
				t.Fatalf("newPlan(%+v, %+v) = nil", tc.c, tc.cfg)
			}
			if p.Planned != tc.planned || p.Cores != tc.cores || p.Machines != tc.machines || p.Provisioned != tc.provisioned {
				t.Errorf("newPlan(%+v, %+v) = %+v; want %.0f/s per core planned, %d cores, %d machines, %d cores provisioned",
					tc.c, tc.cfg, p, tc.planned, tc.cores, tc.machines, tc.provisioned)
			}
			// With Spare machines down, the rest still carry the peak at
			// the planned rate per core.
			if left := float64((p.Machines-p.Spare)*p.MachineCores) * p.Planned; left < p.Peak {
				t.Errorf("plan %+v: %d machines left carry %.0f/s < peak", p, p.Machines-p.Spare, left)
			}
		})
	}
	if p := newPlan(&Capacity{}, PlanConfig{Peak: 1000}); p != nil {
		t.Errorf("newPlan without capacity = %+v, want nil", p)
	}
	if p := newPlan(&Capacity{PerCore: 10}, PlanConfig{}); p != nil {
		t.Errorf("newPlan without a peak = %+v, want nil", p)
	}
}

func TestPlanTable(t *testing.T) {
	p := newPlan(&Capacity{Rate: 2063, Cores: 2, PerCore: 1031.5, AtLeast: true}, PlanConfig{Peak: 100000, Spare: 1})
	var b strings.Builder
	if err := p.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	// 1031.5 x 0.7 = 722.05/s; 100000 / 722.05 = 138.5 -> 139 cores;
	// ceil(139/8) = 18 machines + 1 spare = 19; 152 cores.
	want := `plan for a peak of 100000 requests/s: each core at most 70% of its measured rate at the peak, N+1 machines of 8 cores
  per core                   1032  requests/s or more, measured (a lower bound: the plan may be generous)
  per core planned            722  requests/s (70% of it)
  cores for the peak          139  100000 / 722, rounded up
  machines                     19  18 for the peak + 1 spare
  cores provisioned           152  19 machines x 8 cores
`
	if got := b.String(); got != want {
		t.Errorf("WriteTable wrote\n%s\nwant\n%s", got, want)
	}
}
