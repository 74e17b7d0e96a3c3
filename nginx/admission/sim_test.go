package admission

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// simWorker is a fluid model of a worker: a pool of slots answering
// capacity requests per second, a queue that holds what it can solve in
// 50 ms and refuses the rest with busy 503s; it reports its requests in
// flight as the real one's request time does (Little's law).
type simWorker struct {
	id       string
	capacity float64
	slots    int
	dead     bool

	queue float64
	// over the current window
	answered, busy, waitWeighted, inFlightSec float64
	// over the whole run, after warm (seconds)
	warm, goodput, busyTotal float64
}

// simEdge is one nginx instance with its controller.
type simEdge struct {
	c                *controller
	demand           func(t float64) float64
	rate             float64
	renders          []float64 // times of renders, seconds
	trace            []float64 // rate per second
	passed, rejected float64
}

type sim struct {
	t       *testing.T
	rng     *rand.Rand
	workers []*simWorker
	edges   []*simEdge
	noise   float64 // relative noise on capacity and demand per step
	now     float64 // seconds
	onTick  func(s *sim)
}

const (
	simDT    = 0.05 // seconds per fluid step
	simSteps = 20   // fluid steps per second
)

func newSim(t *testing.T, seed uint64, noise float64, workers ...*simWorker) *sim {
	return &sim{t: t, rng: rand.New(rand.NewPCG(seed, 1)), workers: workers, noise: noise}
}

func (s *sim) addEdge(cfg Config, demand func(t float64) float64) *simEdge {
	s.t.Helper()
	c, err := newController(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	e := &simEdge{c: c, demand: demand}
	s.edges = append(s.edges, e)
	return e
}

func (s *sim) jitter() float64 { return 1 + s.noise*s.rng.NormFloat64() }

// run advances the model by seconds, sampling every controller once per
// second (the scrape interval).
func (s *sim) run(seconds int) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for sec := 0; sec < seconds; sec++ {
		for step := 0; step < simSteps; step++ {
			s.fluid()
			s.now += simDT
		}
		if s.onTick != nil {
			s.onTick(s)
		}
		// each edge sees the same workers' window
		var ws []workerReport
		var total float64
		for _, w := range s.workers {
			if w.dead {
				continue
			}
			wait := 0.0
			if w.answered+w.busy > 0 {
				wait = w.waitWeighted / (w.answered + w.busy)
			}
			ws = append(ws, workerReport{
				ID: w.id, Answered: w.answered, Busy503: w.busy, Slots: w.slots,
				QueueWait: time.Duration(wait * float64(time.Second)),
				InFlight:  w.inFlightSec,
			})
			total += w.answered
			w.answered, w.busy, w.waitWeighted, w.inFlightSec = 0, 0, 0, 0
		}
		for _, e := range s.edges {
			smp := sample{At: start.Add(time.Duration(math.Round(s.now*1000)) * time.Millisecond), Window: time.Second, Workers: ws,
				Nginx: nginxCounts{Known: len(s.edges) > 1, Passed: e.passed, Rejected: e.rejected}}
			d := e.c.Step(smp)
			if d.Render {
				e.rate = d.Rate
				e.renders = append(e.renders, s.now)
			}
			e.trace = append(e.trace, e.rate)
			e.passed, e.rejected = 0, 0
		}
	}
}

// fluid moves one simDT of traffic: each edge admits up to its rate, the
// live workers share the admitted requests evenly.
func (s *sim) fluid() {
	var admitted float64
	for _, e := range s.edges {
		d := math.Max(0, e.demand(s.now)*s.jitter())
		a := d
		if e.rate > 0 && a > e.rate {
			a = e.rate
		}
		e.passed += a * simDT
		e.rejected += (d - a) * simDT
		admitted += a
	}
	var live []*simWorker
	for _, w := range s.workers {
		if !w.dead {
			live = append(live, w)
		}
	}
	for _, w := range live {
		capa := w.capacity * s.jitter()
		arrived := admitted / float64(len(live)) * simDT
		w.queue += arrived
		refused := 0.0
		if qcap := capa * 0.05; w.queue > qcap {
			refused = w.queue - qcap
			w.busy += refused
			w.queue = qcap
		}
		served := math.Min(w.queue, capa*simDT)
		w.queue -= served
		w.answered += served
		if s.now >= w.warm {
			w.goodput += served
			w.busyTotal += refused
		}
		w.waitWeighted += served * (w.queue / capa)
		// In flight: the backlog, the slots in use, and the wait that
		// variable service times add below saturation (M/D/1's, halved:
		// nginx's queue paces the arrivals).
		rho := math.Min(0.999, arrived/(capa*simDT))
		busySlots := float64(w.slots) * math.Min(1, served/(capa*simDT))
		w.inFlightSec += (w.queue + busySlots + float64(w.slots)*0.5*rho*rho/(2*(1-rho))) * simDT
	}
}

func worker(id string, capacity float64) *simWorker {
	return &simWorker{id: id, capacity: capacity, slots: 2}
}

func constant(v float64) func(float64) float64 { return func(float64) float64 { return v } }

// settle returns the first second from which trace stays within band
// (relative) of want until from+window, or -1.
func settle(trace []float64, from int, want, band float64) int {
	last := -1
	for i := len(trace) - 1; i >= from; i-- {
		if math.Abs(trace[i]-want) > band*want {
			last = i
			break
		}
	}
	switch last {
	case len(trace) - 1:
		return -1
	case -1:
		return 0
	}
	return last + 1 - from
}

// swing is (max - min) / mean of trace[from:].
func swing(trace []float64, from int) float64 {
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	for _, v := range trace[from:] {
		lo, hi, sum = math.Min(lo, v), math.Max(hi, v), sum+v
	}
	return (hi - lo) / (sum / float64(len(trace)-from))
}

// settlesAtCapacity checks that the rate in trace settles, after second
// change, within 0.8..1 x the capacity: its mean from second from on lies
// there, and it stays within 10% of that mean no later than within
// seconds after change.
func settlesAtCapacity(t *testing.T, trace []float64, change, from, within int) {
	t.Helper()
	final := meanFrom(trace, from)
	if final < 0.8*simCapacity || final > simCapacity {
		t.Errorf("settled at %.0f/s, want 0.8..1 x the capacity %v", final, simCapacity)
	}
	if got := settle(trace, change, final, 0.10); got < 0 || got > within {
		t.Errorf("settled %d s after second %d, want within %d s to +-10%% of %.0f", got, change, within, final)
	}
}

// meanFrom is the mean of trace[from:].
func meanFrom(trace []float64, from int) float64 {
	m := 0.0
	for _, v := range trace[from:] {
		m += v / float64(len(trace)-from)
	}
	return m
}

func peak(trace []float64, from int) float64 {
	p := 0.0
	for _, v := range trace[from:] {
		p = math.Max(p, v)
	}
	return p
}

func rendersAfter(e *simEdge, t float64) int {
	n := 0
	for _, r := range e.renders {
		if r > t {
			n++
		}
	}
	return n
}

func minGap(e *simEdge) float64 {
	g := math.Inf(1)
	for i := 2; i < len(e.renders); i++ { // the start render does not count
		g = math.Min(g, math.Round((e.renders[i]-e.renders[i-1])*1000)/1000)
	}
	return g
}

func dump(trace []float64) string {
	s := ""
	for i, v := range trace {
		s += fmt.Sprintf("%d:%.0f ", i, v)
	}
	return s
}
