package admission

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Config holds the control law's settings. DefaultConfig gives every one;
// a zero field is not a valid setting.
type Config struct {
	Off   bool    // no admission queue: the includes carry comments only
	Fixed float64 // > 0: this rate in requests/s, whatever the workers say
	Floor float64 // the lowest rate, requests/s
	Max   float64 // the highest rate, and the rate before any estimate

	// Step is the relative move of the computed rate that re-renders the
	// includes (hysteresis), Interval the least time between two renders.
	Step     float64
	Interval time.Duration

	// waitTarget is the workers' mean queue wait above which the rate is
	// cut; busyShare the share of busy 503s among the workers' answers
	// above which it is cut too.
	waitTarget time.Duration
	busyShare  float64
	// upstreamTarget is the mean upstream time (nginx's view) above which
	// the whole stack counts as saturated: with easy puzzles the solver
	// is a small part of a request and the workers' own queue stays
	// empty while the CPU they share with nginx is full.
	upstreamTarget time.Duration
	// utilization is the share of the workers' estimated capacity the
	// rate aims at; gain how far the rate moves toward its target per
	// sample (1 jumps there).
	utilization float64
	gain        float64
	// headroom is how far above what it admits now an instance whose
	// nginx turns nobody away keeps its rate, when other instances share
	// the workers: room for its clients to grow.
	headroom float64

	// queueMax is the longest wait in nginx's queue, burst / rate; pass
	// the part of it that passes at once, delay / rate.
	queueMax time.Duration
	pass     time.Duration
}

// DefaultConfig returns the defaults; the figures behind them are in
// nginx/README.md, "Admission".
func DefaultConfig() Config {
	return Config{
		Floor: 50, Max: 100000,
		Step: 0.05, Interval: 5 * time.Second,
		waitTarget: 10 * time.Millisecond, busyShare: 0.01, upstreamTarget: 20 * time.Millisecond,
		utilization: 0.95, gain: 0.5, headroom: 0.1,
		queueMax: 50 * time.Millisecond, pass: 10 * time.Millisecond,
	}
}

// Check reports the first setting that makes no sense.
func (c Config) Check() error {
	switch {
	case c.Off:
		return nil
	case c.Fixed < 0 || math.IsNaN(c.Fixed) || math.IsInf(c.Fixed, 0):
		return fmt.Errorf("admission: fixed rate %v: want >= 0", c.Fixed)
	case !(c.Floor >= 1) || !(c.Max >= c.Floor) || math.IsInf(c.Max, 0):
		return fmt.Errorf("admission: bounds %v..%v: want 1 <= min <= max", c.Floor, c.Max)
	case !(c.Step >= 0 && c.Step < 1):
		return fmt.Errorf("admission: step %v: want 0 <= step < 1", c.Step)
	case c.Interval <= 0:
		return errors.New("admission: interval must be positive")
	case c.waitTarget <= 0 || c.upstreamTarget <= 0:
		return errors.New("admission: wait and upstream targets must be positive")
	case !(c.busyShare > 0 && c.busyShare < 1):
		return fmt.Errorf("admission: busy share %v: want 0 < share < 1", c.busyShare)
	case !(c.utilization > 0 && c.utilization <= 1):
		return fmt.Errorf("admission: utilization %v: want 0 < u <= 1", c.utilization)
	case !(c.gain > 0 && c.gain <= 1):
		return fmt.Errorf("admission: gain %v: want 0 < g <= 1", c.gain)
	case !(c.headroom >= 0 && c.headroom < 1):
		return fmt.Errorf("admission: headroom %v: want 0 <= h < 1", c.headroom)
	case c.queueMax <= 0 || c.pass < 0 || c.pass > c.queueMax:
		return fmt.Errorf("admission: queue %v, pass %v: want 0 <= pass <= queue, queue > 0", c.queueMax, c.pass)
	}
	return nil
}

// workerReport is what one worker reported over one sample's window, as rates
// per second where it says so.
type workerReport struct {
	ID           string  // stable across samples (its metrics address)
	Answered     float64 // GET answers per second (solved and no_solution)
	Busy503      float64 // busy 503s per second (too_busy)
	Solves       float64 // solver runs per second
	SolveSeconds float64 // solver time per second: busy slot-seconds
	Slots        int     // pool size
	SlotsBusy    float64 // slots in use at the scrape
	QueueDepth   float64 // puzzles waiting for a slot at the scrape
	QueueWait    time.Duration
}

// nginxCounts is what this instance's nginx counted over the window, per second.
// Known is false when nothing reads nginx's log.
type nginxCounts struct {
	Known    bool
	Passed   float64 // admitted to the workers (delayed ones included)
	Delayed  float64 // waited in the queue
	Rejected float64 // turned away by the queue (503)
	// Upstream is the mean time of the workers' answers as nginx saw
	// them (0 when none).
	Upstream time.Duration
}

// sample is one observation: every worker that answered its scrape and
// this nginx's counts. Window is the time the rates are taken over.
type sample struct {
	At      time.Time
	Window  time.Duration
	Workers []workerReport
	Nginx   nginxCounts
}

// decision is the controller's answer to one sample.
type decision struct {
	Rate      float64 // the rate nginx runs with after this sample
	Computed  float64 // the rate the law computed (Rate lags it by the hysteresis)
	Target    float64 // where the law steers
	Capacity  float64 // the workers' estimated answers per second
	Render    bool    // the includes must be rendered with Rate and loaded
	Reason    reason  // why Rate moved, or why not
	Congested bool    // the workers' queue wait or busy 503s are over target
}

// reason names a decision in logs and metrics (a small fixed set).
type reason string

const (
	reasonStart     reason = "start"   // the first sample
	reasonHold      reason = "hold"    // within the step or the interval
	reasonRaise     reason = "raise"   // rendered a higher rate
	reasonCut       reason = "cut"     // rendered a lower rate
	reasonNoWorkers reason = "no_data" // no worker answered: the rate stays
	reasonFixed     reason = "fixed"   // Config.Fixed
	reasonOff       reason = "off"     // Config.Off
)

// reasons lists every reason, for metrics.
var reasons = []reason{reasonStart, reasonHold, reasonRaise, reasonCut, reasonNoWorkers, reasonFixed, reasonOff}

// controller computes the admission rate. It is not safe for concurrent
// use; Loop owns one.
//
// The law, per sample:
//
//	saturated  = w's queue wait > waitTarget, its busy 503s > busyShare, or nginx's
//	             mean upstream time > upstreamTarget (the whole stack is full)
//	capacity_w = EWMA(answered_w), a fall at once       while w is saturated
//	           = EWMA(slots_w x solves_w / solveSeconds_w / cal_w) otherwise
//	cal_w      = EWMA(slots_w x solves_w / solveSeconds_w / answered_w) while saturated
//	others     = sum(answered + busy503) - passed    (other nginx instances; 0 when passed is unknown)
//	k         *= 0.95 while congested (mean queue wait > waitTarget, busy 503s > busyShare,
//	             or the stack saturated)
//	             under a settled rate within the estimate, else toward 1 by x1.01
//	target     = clamp(sum(capacity) x utilization x k - others, Floor, Max),
//	             at least passed x (1 + headroom) when others > 0 and nginx turns nobody away
//	computed   = target when congested and target < computed (cut at once),
//	             else computed + gain x (target - computed)
//	rate       = computed when it differs from the rendered rate by more than
//	             Step and Interval has passed since the last render
type controller struct {
	cfg      Config
	est      map[string]*workerEstimate
	computed float64
	rate     float64 // rendered
	k        float64
	last     time.Time
	started  bool
}

// newController returns a controller for cfg (see Config.Check).
func newController(cfg Config) (*controller, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	return &controller{cfg: cfg, est: map[string]*workerEstimate{}, k: 1}, nil
}

// ewma weight of a new capacity figure.
const ewmaAlpha = 0.3

// Step takes one sample and decides the rate.
func (c *controller) Step(s sample) decision {
	cfg := c.cfg
	switch {
	case cfg.Off:
		return decision{Reason: reasonOff, Render: !c.started, Rate: 0}
	case cfg.Fixed > 0:
		first := !c.started
		c.started, c.rate, c.computed = true, cfg.Fixed, cfg.Fixed
		return decision{Rate: cfg.Fixed, Computed: cfg.Fixed, Target: cfg.Fixed, Render: first, Reason: reasonFixed}
	}
	if !c.started {
		// The first render carries Max and does not count for the
		// interval: the first estimate renders at once.
		c.started, c.rate, c.computed = true, cfg.Max, cfg.Max
		d := c.decide(s)
		d.Render, d.Reason, d.Rate = true, reasonStart, c.rate
		return d
	}
	if len(s.Workers) == 0 {
		return decision{Rate: c.rate, Computed: c.computed, Target: c.computed, Reason: reasonNoWorkers}
	}
	d := c.decide(s)
	d.Rate, d.Reason = c.rate, reasonHold
	moved := math.Abs(c.computed-c.rate) > cfg.Step*c.rate
	if moved && s.At.Sub(c.last) >= cfg.Interval {
		d.Reason = reasonRaise
		if c.computed < c.rate {
			d.Reason = reasonCut
		}
		c.rate, c.last = c.computed, s.At
		d.Rate, d.Render = c.rate, true
	}
	return d
}

// decide updates the estimates and the computed rate.
func (c *controller) decide(s sample) decision {
	cfg := c.cfg
	var capacity, answered, busy503 float64
	var waitSum float64
	var waitN float64
	seen := make(map[string]bool, len(s.Workers))
	var known, unknown int
	stackSaturated := s.Nginx.Known && s.Nginx.Upstream > cfg.upstreamTarget
	for _, w := range s.Workers {
		seen[w.ID] = true
		answered += w.Answered
		busy503 += w.Busy503
		if w.Answered+w.Busy503 > 0 {
			waitSum += w.QueueWait.Seconds() * (w.Answered + w.Busy503)
			waitN += w.Answered + w.Busy503
		}
		e := c.est[w.ID]
		if e == nil {
			e = &workerEstimate{}
			c.est[w.ID] = e
		}
		if e.update(w, cfg.waitTarget, cfg.busyShare, stackSaturated) {
			capacity += e.capacity
			known++
		} else {
			unknown++
		}
	}
	for id := range c.est {
		if !seen[id] {
			delete(c.est, id) // a worker gone takes its capacity with it
		}
	}
	if known > 0 && unknown > 0 {
		// A worker without a figure yet (it just joined, or it is idle)
		// counts as the mean of the others.
		capacity += capacity / float64(known) * float64(unknown)
	}
	wait := 0.0
	if waitN > 0 {
		wait = waitSum / waitN
	}
	congested := stackSaturated || wait > cfg.waitTarget.Seconds() ||
		(answered+busy503 > 0 && busy503/(answered+busy503) > cfg.busyShare)
	// Other nginx instances sending to the same workers: what reached the
	// workers beyond what this one passed. Each instance aims at what the
	// others leave, so that together they admit the capacity (two
	// instances that both turn requests away settle on a split of it).
	// Each moves by its share of what reached the workers, so that
	// together they move by gain, however many they are.
	others, limited, passed, share := 0.0, false, 0.0, 1.0
	if n := s.Nginx; n.Known && answered+busy503 > 0 {
		others = math.Max(0, answered+busy503-n.Passed)
		limited, passed = n.Rejected > 0, n.Passed
		share = math.Min(1, n.Passed/(answered+busy503))
	}
	d := decision{Capacity: capacity, Congested: congested}
	if capacity == 0 {
		// No estimate yet (no solve seen): steer nowhere.
		d.Target, d.Computed = c.computed, c.computed
		return d
	}
	// k corrects the estimate only while nginx runs about the computed
	// rate and that rate is within the estimate: congestion under a rate
	// above the estimate is the rate's fault, not the estimate's, and a
	// correction that runs while the rendered rate lags (the hysteresis)
	// would wind up.
	base := capacity*cfg.utilization - others
	settled := math.Abs(c.computed-c.rate) <= cfg.Step*c.rate
	switch {
	case congested && settled && c.rate <= base:
		c.k = math.Max(0.2, c.k*0.95)
	case !congested:
		c.k = math.Min(1, c.k*1.01)
	}
	target := capacity*cfg.utilization*c.k - others
	if others > 0 && !limited && !congested {
		target = math.Max(target, passed*(1+cfg.headroom))
	}
	target = math.Min(cfg.Max, math.Max(cfg.Floor, target))
	gain := cfg.gain
	if congested && target < c.computed {
		gain = 1 // cut at once, raise by the gain
	}
	c.computed += gain * share * (target - c.computed)
	d.Target, d.Computed = target, c.computed
	return d
}

// workerEstimate is what the controller keeps per worker.
type workerEstimate struct {
	capacity float64 // answers per second (EWMA)
	// calibration is the slot-based figure over the answers, measured
	// while the worker was saturated: the share of a request's cost that
	// is not the solver's (parsing, FastCGI, nginx on the same cores).
	calibration float64
}

// update folds one window of w into e and reports whether e has a figure.
// A saturated window (queue wait or busy 503s over the congestion's
// thresholds, or nginx's upstream time over its target)
// measures the capacity itself: what the worker answered. Any other
// window reads it from the solver: slots x solves / solver seconds, over
// the calibration when there is one.
func (e *workerEstimate) update(w workerReport, waitTarget time.Duration, busyShare float64, stackSaturated bool) bool {
	slotBased := 0.0
	if w.SolveSeconds > 0 && w.Solves > 0 && w.Slots > 0 {
		slotBased = float64(w.Slots) * w.Solves / w.SolveSeconds
	}
	fold := func(old *float64, v float64) {
		if *old == 0 {
			*old = v
		} else {
			*old += ewmaAlpha * (v - *old)
		}
	}
	// Over the window, not at the scrape: every slot busy or a puzzle
	// waiting at one instant is common well below the capacity.
	// A few busy 503s or a short wait come and go below the capacity
	// (bursts, a noisy CPU); the thresholds are the congestion's.
	saturated := stackSaturated || w.QueueWait > waitTarget || w.Busy503 > busyShare*(w.Answered+w.Busy503)
	switch {
	case saturated && w.Answered > 0:
		// A fall is followed at once (harder puzzles, a worker's CPU
		// taken): the workers are already behind.
		if w.Answered < e.capacity {
			e.capacity = w.Answered
		} else {
			fold(&e.capacity, w.Answered)
		}
		if slotBased > 0 {
			fold(&e.calibration, slotBased/w.Answered)
		}
	case slotBased > 0 && e.calibration > 0:
		fold(&e.capacity, slotBased/e.calibration)
	case slotBased > 0:
		fold(&e.capacity, slotBased)
	}
	return e.capacity > 0
}

// Rate is the current rendered rate (0 before the first sample or when off).
func (c *controller) Rate() float64 { return c.rate }
