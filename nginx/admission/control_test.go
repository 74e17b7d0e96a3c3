package admission

import (
	"testing"
)

// The capacity the simulated stack answers: 2 workers x 4,000/s.
const simCapacity = 8000.0

func TestSteadyOverloadSettles(t *testing.T) {
	s := newSim(t, 1, 0.02, worker("a", 4000), worker("b", 4000))
	e := s.addEdge(DefaultConfig(), constant(2*simCapacity))
	s.run(120)
	t.Logf("trace %s", dump(e.trace))
	settlesAtCapacity(t, e.trace, 0, 60, 30)
	if sw := swing(e.trace, 60); sw > 0.10 {
		t.Errorf("swing after settling %.3f, want <= 0.10", sw)
	}
	if n := rendersAfter(e, 90); n > 2 {
		t.Errorf("%d renders in the last 30 s of a steady load, want <= 2", n)
	}
	if g := minGap(e); g < DefaultConfig().Interval.Seconds() {
		t.Errorf("two renders %.1f s apart, want >= the interval", g)
	}
}

func TestStepUpInDemand(t *testing.T) {
	s := newSim(t, 2, 0.02, worker("a", 4000), worker("b", 4000))
	e := s.addEdge(DefaultConfig(), func(t float64) float64 {
		if t < 60 {
			return 0.5 * simCapacity
		}
		return 3 * simCapacity
	})
	s.run(150)
	t.Logf("trace %s", dump(e.trace))
	settlesAtCapacity(t, e.trace, 60, 100, 15)
	// Before the step the rate is the solver's uncalibrated reading,
	// held: the overshoot counts from the first render after the step.
	first := 60
	for first < len(e.trace)-1 && e.trace[first] == e.trace[59] {
		first++
	}
	if p := peak(e.trace, first); p > 1.15*simCapacity {
		t.Errorf("overshoot: peak %.0f/s after the step, want <= 1.15 x capacity", p)
	}
	if sw := swing(e.trace, 100); sw > 0.10 {
		t.Errorf("swing %.3f, want <= 0.10", sw)
	}
}

// The puzzle mix turns to the hardest set: each puzzle costs 30 x the
// solver's work, and the solver is nearly the whole cost of a request.
func TestStepDownInCapacity(t *testing.T) {
	a, b := worker("a", 4000), worker("b", 4000)
	s := newSim(t, 3, 0.02, a, b)
	e := s.addEdge(DefaultConfig(), constant(2*simCapacity))
	s.onTick = func(s *sim) {
		if s.now >= 60 && a.capacity == 4000 {
			for _, w := range []*simWorker{a, b} {
				w.capacity = 4000.0 / 30
			}
		}
	}
	s.run(150)
	t.Logf("trace %s", dump(e.trace))
	hard := 2 * 4000.0 / 30
	if got := settle(e.trace, 60, 0.95*hard, 0.15); got < 0 || got > 15 {
		t.Errorf("settled %d s after the switch, want within 15 s of 0.95 x the hard capacity", got)
	}
	if sw := swing(e.trace, 100); sw > 0.15 {
		t.Errorf("swing %.3f, want <= 0.15", sw)
	}
	if p := peak(e.trace, 90); p > 1.15*hard {
		t.Errorf("peak %.0f/s once settled, want <= 1.15 x %.0f", p, hard)
	}
}

// Noise of 15% on the capacity and the demand every 50 ms: windows
// saturate now and then below the mean capacity, so the rate settles
// lower and moves between cuts and raises (at most one per interval);
// what counts is that the workers stay busy without busy 503s.
func TestNoisyMeasurements(t *testing.T) {
	a, b := worker("a", 4000), worker("b", 4000)
	a.warm, b.warm = 60, 60
	s := newSim(t, 4, 0.15, a, b)
	cfg := DefaultConfig()
	e := s.addEdge(cfg, constant(2*simCapacity))
	s.run(300)
	t.Logf("trace %s", dump(e.trace))
	if sw := swing(e.trace, 60); sw > 0.6 {
		t.Errorf("swing %.3f under noise, want <= 0.6", sw)
	}
	t.Logf("swing %.3f, %d renders in 240 s", swing(e.trace, 60), rendersAfter(e, 60))
	if g := minGap(e); g < cfg.Interval.Seconds() {
		t.Errorf("two renders %.1f s apart, want >= %v", g, cfg.Interval)
	}
	goodput := (a.goodput + b.goodput) / 240
	busy := (a.busyTotal + b.busyTotal) / (a.goodput + b.goodput)
	t.Logf("goodput %.0f/s = %.2f of the capacity, busy 503s %.4f of answers", goodput, goodput/simCapacity, busy)
	if goodput < 0.65*simCapacity || busy > 0.01 {
		t.Errorf("goodput %.0f/s (want >= 0.65 x %.0f), busy share %.4f (want <= 0.01)", goodput, simCapacity, busy)
	}
}

func TestWorkerJoinsAndDies(t *testing.T) {
	a, b, c := worker("a", 4000), worker("b", 4000), worker("c", 4000)
	c.dead = true
	s := newSim(t, 5, 0.02, a, b, c)
	e := s.addEdge(DefaultConfig(), constant(3*simCapacity))
	s.onTick = func(s *sim) {
		switch {
		case s.now >= 120 && !b.dead:
			b.dead = true
		case s.now >= 60 && s.now < 120 && c.dead:
			c.dead = false
		}
	}
	s.run(180)
	t.Logf("trace %s", dump(e.trace))
	before := e.trace[59]
	rose := -1
	for i := 60; i < 120; i++ {
		if e.trace[i] > 1.2*before {
			rose = i - 60
			break
		}
	}
	if rose < 0 || rose > 10 {
		t.Errorf("a third worker joined: the rate rose by 20%% after %d s, want within 10 s", rose)
	}
	if got := settle(e.trace[:120], 60, 0.95*12000, 0.10); got < 0 || got > 15 {
		t.Errorf("three workers: settled after %d s, want within 15 s", got)
	}
	if got := settle(e.trace, 120, 0.95*8000, 0.10); got < 0 || got > 15 {
		t.Errorf("a worker died: settled after %d s, want within 15 s", got)
	}
}

// Two nginx instances (Swarm's shape) share the same workers, each with
// its own controller and its own share of the clients; they know their
// own passed and rejected counts only.
func TestTwoInstancesConverge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		d1, d2 float64
	}{
		{"even", 1.5 * simCapacity, 1.5 * simCapacity},
		{"uneven", 0.3 * simCapacity, 2 * simCapacity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, 6, 0.02, worker("a", 4000), worker("b", 4000))
			e1 := s.addEdge(DefaultConfig(), constant(tc.d1))
			e2 := s.addEdge(DefaultConfig(), constant(tc.d2))
			s.run(240)
			t.Logf("one %s", dump(e1.trace))
			t.Logf("two %s", dump(e2.trace))
			sum := make([]float64, len(e1.trace))
			for i := range sum {
				sum[i] = e1.trace[i] + e2.trace[i]
			}
			for name, tr := range map[string][]float64{"one": e1.trace, "two": e2.trace, "sum": sum} {
				if sw := swing(tr, 120); sw > 0.15 {
					t.Errorf("%s: swing %.3f in the last 120 s, want <= 0.15", name, sw)
				}
			}
			// Together they admit about what the workers answer: neither
			// the sum of two full rates nor starved.
			mean := 0.0
			for _, v := range sum[120:] {
				mean += v / float64(len(sum)-120)
			}
			if mean < 0.8*simCapacity || mean > 1.15*simCapacity {
				t.Errorf("sum of the rates %.0f/s, want 0.8..1.15 x %.0f", mean, simCapacity)
			}
		})
	}
}

func TestBoundsFixedOff(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Floor, cfg.Max = 1000, 5000
	s := newSim(t, 7, 0.02, worker("a", 200), worker("b", 200))
	e := s.addEdge(cfg, constant(2*simCapacity))
	s.run(60)
	for i, v := range e.trace[1:] {
		if v < cfg.Floor || v > cfg.Max {
			t.Fatalf("rate %.0f at %d s, outside %v..%v", v, i+1, cfg.Floor, cfg.Max)
		}
	}
	if last := e.trace[len(e.trace)-1]; last != cfg.Floor {
		t.Errorf("workers answering 400/s: rate %.0f, want the floor %v", last, cfg.Floor)
	}

	cfg = DefaultConfig()
	cfg.Fixed = 1234
	s = newSim(t, 8, 0.02, worker("a", 4000))
	e = s.addEdge(cfg, constant(2*simCapacity))
	s.run(30)
	for i, v := range e.trace {
		if v != 1234 {
			t.Fatalf("fixed rate: %.0f at %d s", v, i)
		}
	}
	if len(e.renders) != 1 {
		t.Errorf("fixed rate rendered %d times, want once", len(e.renders))
	}

	c, err := newController(Config{Off: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Step(sample{}); d.Rate != 0 || d.Reason != reasonOff {
		t.Errorf("off: %+v, want rate 0 and reason off", d)
	}
}

func TestConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"floor zero", func(c *Config) { c.Floor = 0 }},
		{"max below floor", func(c *Config) { c.Max = c.Floor - 1 }},
		{"step one", func(c *Config) { c.Step = 1 }},
		{"no interval", func(c *Config) { c.Interval = 0 }},
		{"pass over queue", func(c *Config) { c.pass = c.queueMax + 1 }},
		{"negative fixed", func(c *Config) { c.Fixed = -1 }},
	} {
		cfg := DefaultConfig()
		tc.mod(&cfg)
		if _, err := newController(cfg); err == nil {
			t.Errorf("%s: newController(%+v) = nil error", tc.name, cfg)
		}
	}
	if err := DefaultConfig().Check(); err != nil {
		t.Errorf("DefaultConfig().Check() = %v", err)
	}
}
