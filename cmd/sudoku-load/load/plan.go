package load

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// PlanConfig is a peak to plan for and the headroom rule of the plan.
type PlanConfig struct {
	// Peak is the rate to plan for, requests/s.
	Peak float64
	// Utilisation is the share of each core's measured capacity that the
	// plan uses at the peak (0: 0.7), so that a core at the peak still
	// meets the objective with room for bursts and noisy neighbours.
	Utilisation float64
	// MachineCores is the number of cores of one machine (0: 8).
	MachineCores int
	// Spare is the number of machines beyond those the peak needs, so that
	// this many can fail at the peak (N+Spare; negative counts as 0).
	Spare int
}

// Plan is the cores and machines a peak needs at a measured capacity.
type Plan struct {
	Peak         float64 `json:"peak"`
	Utilisation  float64 `json:"utilisation"`
	MachineCores int     `json:"machine_cores"`
	Spare        int     `json:"spare_machines"`
	// PerCore is the measured capacity per core; Planned is the share of
	// it the plan uses (PerCore x Utilisation), requests/s.
	PerCore float64 `json:"per_core"`
	Planned float64 `json:"per_core_planned"`
	// Cores is what the peak needs: ceil(Peak / Planned).
	Cores int `json:"cores"`
	// Machines is ceil(Cores / MachineCores) + Spare; Provisioned is their
	// cores.
	Machines    int `json:"machines"`
	Provisioned int `json:"cores_provisioned"`
	// AtLeast is the measured capacity's: the plan may then ask for more
	// than is needed, never less.
	AtLeast bool `json:"at_least"`
}

// newPlan plans for cfg.Peak at c's capacity per core. It returns nil when
// c has no capacity (no rate met the objective) or there is no peak.
func newPlan(c *Capacity, cfg PlanConfig) *Plan {
	if cfg.Peak <= 0 || c.PerCore <= 0 {
		return nil
	}
	if cfg.Utilisation <= 0 {
		cfg.Utilisation = 0.7
	}
	if cfg.MachineCores <= 0 {
		cfg.MachineCores = 8
	}
	cfg.Spare = max(cfg.Spare, 0)
	p := &Plan{Peak: cfg.Peak, Utilisation: cfg.Utilisation, MachineCores: cfg.MachineCores, Spare: cfg.Spare,
		PerCore: c.PerCore, Planned: c.PerCore * cfg.Utilisation, AtLeast: c.AtLeast}
	p.Cores = int(math.Ceil(p.Peak / p.Planned))
	p.Machines = (p.Cores+p.MachineCores-1)/p.MachineCores + p.Spare
	p.Provisioned = p.Machines * p.MachineCores
	return p
}

// WriteTable writes p as one table, its rule in the heading.
func (p *Plan) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "plan for a peak of %.0f requests/s: each core at most %.0f%% of its measured rate at the peak, N+%d machines of %d cores\n",
		p.Peak, 100*p.Utilisation, p.Spare, p.MachineCores)
	row := func(what string, v any, how string) { fmt.Fprintf(&b, "  %-20s %10v  %s\n", what, v, how) }
	measured := "requests/s, measured"
	if p.AtLeast {
		measured = "requests/s or more, measured (a lower bound: the plan may be generous)"
	}
	row("per core", fmt.Sprintf("%.0f", p.PerCore), measured)
	row("per core planned", fmt.Sprintf("%.0f", p.Planned), fmt.Sprintf("requests/s (%.0f%% of it)", 100*p.Utilisation))
	row("cores for the peak", p.Cores, fmt.Sprintf("%.0f / %.0f, rounded up", p.Peak, p.Planned))
	row("machines", p.Machines, fmt.Sprintf("%d for the peak + %d spare", p.Machines-p.Spare, p.Spare))
	row("cores provisioned", p.Provisioned, fmt.Sprintf("%d machines x %d cores", p.Machines, p.MachineCores))
	_, err := io.WriteString(w, b.String())
	return err
}
