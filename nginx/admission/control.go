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

	// The workers' mean requests in flight per solver slot over a window
	// (Little's law on the seconds their requests spend in the worker,
	// from FastCGI begin to end): above inFlightHigh the rate is
	// cut, below inFlightLow it is raised while nginx's queue is what holds
	// the clients back; in between it holds (the deadband).
	inFlightLow, inFlightHigh float64
	// busyShare is the share of busy 503s among the workers' answers
	// above which the rate is cut too.
	busyShare float64
	// cut is the factor a cut applies to what the workers answered; a
	// raise multiplies the rendered rate by inFlightLow over the mean in
	// flight, at least raise and at most fastRaise.
	cut, raise, fastRaise float64
	// settle is how long a rendered rate runs before the law judges it:
	// the windows before it still show the old rate's queue.
	settle time.Duration

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
		inFlightLow: 1.5, inFlightHigh: 3, busyShare: 0.01,
		cut: 0.93, raise: 1.06, fastRaise: 1.5, settle: 2 * time.Second,
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
	case !(c.inFlightLow > 0 && c.inFlightHigh > c.inFlightLow):
		return fmt.Errorf("admission: in flight band %v..%v: want 0 < low < high", c.inFlightLow, c.inFlightHigh)
	case !(c.busyShare > 0 && c.busyShare < 1):
		return fmt.Errorf("admission: busy share %v: want 0 < share < 1", c.busyShare)
	case !(c.cut > 0 && c.cut < 1 && c.raise > 1 && c.fastRaise >= c.raise):
		return fmt.Errorf("admission: cut %v, raise %v, fast raise %v: want 0 < cut < 1 < raise <= fast raise", c.cut, c.raise, c.fastRaise)
	case c.settle < 0:
		return errors.New("admission: settle must not be negative")
	case c.queueMax <= 0 || c.pass < 0 || c.pass > c.queueMax:
		return fmt.Errorf("admission: queue %v, pass %v: want 0 <= pass <= queue, queue > 0", c.queueMax, c.pass)
	}
	return nil
}

// workerReport is what one worker reported over one sample's window, as rates
// per second where it says so.
type workerReport struct {
	ID       string  // stable across samples (its metrics address)
	Answered float64 // GET answers per second (solved and no_solution)
	Busy503  float64 // busy 503s per second (too_busy)
	Slots    int     // pool size
	// InFlight is the mean number of requests in the worker over the
	// window, from FCGI_BEGIN_REQUEST to FCGI_END_REQUEST (their wait for
	// a handler included): its request seconds per second (Little's law).
	InFlight  float64
	QueueWait time.Duration // mean wait for a slot (shown, not read by the law)
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
	Capacity  float64 // the workers' answers per second while congested (EWMA)
	InFlight  float64 // the workers' mean requests in flight per slot
	Render    bool    // the includes must be rendered with Rate and loaded
	Reason    reason  // why Rate moved, or why not
	Congested bool    // in flight per slot or busy 503s over target
}

// reason names a decision in logs and metrics (a small fixed set).
type reason string

const (
	reasonStart     reason = "start"   // the first sample
	reasonHold      reason = "hold"    // within the deadband, the step or the interval
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
// The law is additive-increase/multiplicative-decrease's cousin on the
// workers' own depth, the signal TCP Vegas and adaptive concurrency
// limiters read: requests in flight per solver slot, l = sum(InFlight) /
// sum(Slots). Per sample, once the rendered rate has run for settle:
//
//	share    = passed / what reached the workers   (1 when nginx's counts are unknown)
//	binding  = nginx delayed or turned away over 1% of what it passed
//	           (unknown counts: what reached the workers >= 0.9 x rate)
//	l > inFlightHigh or busy 503s > busyShare in cutOf of the last cutIn
//	windows (or l > 2 x inFlightHigh once):
//	           computed = min(rate, answered x share) x cut      (an instance
//	           that is not binding, among others, cuts only past 2 x inFlightHigh)
//	l < inFlightLow and binding, and raiseIn windows in a row not congested:
//	           computed = rate x clamp(inFlightLow / mean l, raise, fastRaise)
//	otherwise  computed = rate                                   (deadband)
//
// and the rendered rate follows computed when it moves by more than Step,
// at most once per Interval. Each branch is computed from the rendered
// rate, not from the last computed one, so that windows waiting out the
// interval do not compound a cut or a raise.
type controller struct {
	cfg      Config
	computed float64
	rate     float64 // rendered
	capacity float64
	last     time.Time // last render
	started  bool
	// recent holds the last windows since the rate last settled, newest
	// last.
	recent []sampled
}

// sampled is what the law keeps of one sample: requests in flight per
// slot, and whether busy 503s were over busyShare.
type sampled struct {
	inFlight float64
	busy     bool
}

// meanOf returns the mean in flight of the last n windows and whether any
// of them was busy.
func meanOf(ws []sampled, n int) (mean float64, busy bool) {
	ws = ws[max(0, len(ws)-n):]
	for _, w := range ws {
		mean += w.inFlight / float64(len(ws))
		busy = busy || w.busy
	}
	return mean, busy
}

// The law's memory: a cut reads the mean of the last cutIn windows, a
// raise that of the last raiseIn.
const cutIn, raiseIn = 3, 5

// newController returns a controller for cfg (see Config.Check).
func newController(cfg Config) (*controller, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	return &controller{cfg: cfg}, nil
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
		return decision{Rate: cfg.Fixed, Computed: cfg.Fixed, Render: first, Reason: reasonFixed}
	}
	if !c.started {
		// The first render carries Max and does not count for the
		// interval: the first move renders at once.
		c.started, c.rate, c.computed = true, cfg.Max, cfg.Max
		d := c.decide(s)
		c.computed = cfg.Max
		d.Render, d.Reason, d.Rate, d.Computed = true, reasonStart, c.rate, c.computed
		return d
	}
	if len(s.Workers) == 0 {
		return decision{Rate: c.rate, Computed: c.computed, Capacity: c.capacity, Reason: reasonNoWorkers}
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

// decide reads the sample and sets the computed rate.
func (c *controller) decide(s sample) decision {
	cfg := c.cfg
	var answered, received, inFlight float64
	slots := 0
	for _, w := range s.Workers {
		answered += w.Answered
		received += w.Answered + w.Busy503
		inFlight += w.InFlight
		slots += max(1, w.Slots)
	}
	l := 0.0
	if slots > 0 {
		l = inFlight / float64(slots)
	}
	busy := received > 0 && (received-answered)/received > cfg.busyShare
	congested := l > cfg.inFlightHigh || busy
	if congested && answered > 0 {
		if c.capacity == 0 {
			c.capacity = answered
		}
		c.capacity += ewmaAlpha * (answered - c.capacity)
	}
	d := decision{Capacity: c.capacity, InFlight: l, Congested: congested}

	share, binding, alone := 1.0, received >= 0.9*c.rate, true
	if n := s.Nginx; n.Known {
		binding = n.Delayed+n.Rejected > 0.01*n.Passed
		if received > 0 {
			share = math.Min(1, n.Passed/received)
		}
		alone = share >= 0.95
	}
	computed := c.rate
	if !s.At.IsZero() && s.At.Sub(c.last) < cfg.settle {
		// The windows still show the previous rate's queue.
		c.recent = c.recent[:0]
		computed = c.computed
	} else {
		c.recent = append(c.recent, sampled{l, busy})
		if len(c.recent) > raiseIn {
			c.recent = c.recent[1:]
		}
	}
	// The mean over the last windows: one noisy window moves nothing,
	// unless it is deep.
	mean, anyBusy := meanOf(c.recent, cutIn)
	deep := l > 4*cfg.inFlightHigh
	switch {
	case (len(c.recent) >= cutIn && (mean > cfg.inFlightHigh || anyBusy) || deep) && (binding || alone || deep) && answered > 0:
		computed = math.Min(c.rate, answered*share) * cfg.cut
	case len(c.recent) >= raiseIn && binding && !anyBusy:
		if m, _ := meanOf(c.recent, raiseIn); m < cfg.inFlightLow {
			// In proportion to the room below the band: a worker that
			// joins takes the rate up in one step or two.
			computed = c.rate * math.Min(cfg.fastRaise, math.Max(cfg.raise, cfg.inFlightLow/math.Max(m, 1e-9)))
		}
	}
	c.computed = math.Min(cfg.Max, math.Max(cfg.Floor, computed))
	d.Computed = c.computed
	return d
}

// Rate is the current rendered rate (0 before the first sample or when off).
func (c *controller) Rate() float64 { return c.rate }
