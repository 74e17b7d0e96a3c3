package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sudoku-fcgi/cmd/cli"
)

func builtinCosts(t *testing.T) []time.Duration {
	t.Helper()
	c, err := readCosts(strings.NewReader(costsTable))
	if err != nil {
		t.Fatalf("built-in cost table: %v", err)
	}
	for i := range c {
		c[i] += 100 * time.Microsecond
	}
	return c
}

func sim(t *testing.T, c Config) Stats {
	t.Helper()
	st, err := Simulate(c)
	if err != nil {
		t.Fatalf("Simulate(%+v): %v", c, err)
	}
	return st
}

func TestBuiltinCostTableCoversBothSets(t *testing.T) {
	sets := map[string]int{}
	for _, line := range strings.Split(costsTable, "\n") {
		if f := strings.Fields(line); len(f) == 2 && !strings.HasPrefix(line, "#") {
			sets[f[0]]++
		}
	}
	if sets["test1000"] != 1000 || sets["hardest200"] != 200 {
		t.Errorf("cost table holds %v, want 1000 test1000 and 200 hardest200 lines", sets)
	}
	builtinCosts(t)
}

func TestReadCostsRejectsBadLines(t *testing.T) {
	for _, in := range []string{"", "# only a comment\n", "set\n", "set -5\n", "set 0\n", "set x\n", "a 1 2\n"} {
		if _, err := readCosts(strings.NewReader(in)); err == nil {
			t.Errorf("readCosts(%q) = nil error, want one", in)
		}
	}
}

func TestMeasureWritesATableReadCostsAccepts(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "few")
	puzzles := "000000010400000000020000000000050407008000300001090000300400200050100000000806000\n" +
		"98.7..6..75..4......3..8.7.5....7.3...94.........2.1..3.......1.9...5.8...52....6\n"
	if err := os.WriteFile(name, []byte(puzzles), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := measure(&out, []string{name}); err != nil {
		t.Fatalf("measure: %v", err)
	}
	c, err := readCosts(&out)
	if err != nil || len(c) != 2 {
		t.Fatalf("readCosts(measure output) = %v, %v; want 2 costs", c, err)
	}
	if err := os.WriteFile(name, []byte("not a puzzle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := measure(&out, []string{name}); err == nil {
		t.Error("measure on a bad puzzle file: nil error, want one")
	}
}

func TestBusyFractionMatchesOfferedLoad(t *testing.T) {
	costs := builtinCosts(t)
	for _, u := range []float64{0.5, 0.9} {
		st := sim(t, Config{Balancers: 2, Servers: 8, Policy: Random, Utilisation: u, Costs: costs, Requests: 200_000, Warmup: 20_000, Seed: 3})
		if st.Busy < u-0.02 || st.Busy > u+0.02 {
			t.Errorf("utilisation %g: servers busy %.3f of the time, want within 0.02", u, st.Busy)
		}
	}
}

func TestSameSeedSameResult(t *testing.T) {
	c := Config{Balancers: 3, Servers: 10, Policy: TwoChoices, Stale: time.Millisecond, Utilisation: 0.8,
		Costs: builtinCosts(t), Requests: 20_000, Seed: 9}
	if a, b := sim(t, c), sim(t, c); a != b {
		t.Errorf("two runs with one seed: %+v and %+v", a, b)
	}
}

// With live information, least-loaded is join-the-shortest-queue: it must
// beat random by far.
func TestLiveLeastLoadedBeatsRandom(t *testing.T) {
	c := Config{Balancers: 10, Servers: 100, Utilisation: 0.9, Costs: builtinCosts(t), Requests: 100_000, Seed: 1}
	c.Policy = Random
	random := sim(t, c)
	c.Policy = LeastLoaded
	ll := sim(t, c)
	if ll.P99*2 > random.P99 || ll.MaxQueue >= random.MaxQueue {
		t.Errorf("live least-loaded p99 %v, most at one server %d; random %v, %d: want under half the p99 and a shorter queue",
			ll.P99, ll.MaxQueue, random.P99, random.MaxQueue)
	}
}

// The herd: ten balancers acting on 5 ms old loads all send to the servers
// that looked idle, which then hold far more than random would put there;
// two choices on the same old loads does not herd.
func TestStaleLeastLoadedHerdsAndTwoChoicesDoesNot(t *testing.T) {
	c := Config{Balancers: 10, Servers: 100, Stale: 5 * time.Millisecond, Utilisation: 0.9, Costs: builtinCosts(t), Requests: 200_000, Seed: 1}
	c.Policy = Random
	random := sim(t, c)
	c.Policy = LeastLoaded
	ll := sim(t, c)
	c.Policy = TwoChoices
	tc := sim(t, c)
	if ll.P99 <= random.P99 || ll.MaxQueue <= 2*random.MaxQueue {
		t.Errorf("stale least-loaded p99 %v, most at one server %d; random %v, %d: want a herd (worse p99, twice the queue)",
			ll.P99, ll.MaxQueue, random.P99, random.MaxQueue)
	}
	if tc.P99*2 > ll.P99 || tc.P99 > random.P99 {
		t.Errorf("stale two choices p99 %v; least-loaded %v, random %v: want under half of least-loaded's and no worse than random",
			tc.P99, ll.P99, random.P99)
	}
}

// One balancer's own counts are the servers' true counts.
func TestOwnCountsOfTheOnlyBalancerAreLive(t *testing.T) {
	for _, p := range []Policy{LeastLoaded, TwoChoices} {
		c := Config{Balancers: 1, Servers: 16, Policy: p, Utilisation: 0.9, Costs: builtinCosts(t), Requests: 50_000, Seed: 4}
		live := sim(t, c)
		c.Own = true
		if own := sim(t, c); own != live {
			t.Errorf("%v: own counts %+v, live %+v; want the same", p, own, live)
		}
	}
}

// Counting only its own requests, each of ten balancers is blind to the
// others but never acts on old numbers: no herd.
func TestOwnCountsDoNotHerd(t *testing.T) {
	c := Config{Balancers: 10, Servers: 100, Utilisation: 0.9, Costs: builtinCosts(t), Requests: 200_000, Seed: 1}
	c.Policy = Random
	random := sim(t, c)
	c.Policy, c.Own = LeastLoaded, true
	own := sim(t, c)
	if own.P99*2 > random.P99 || own.MaxQueue >= random.MaxQueue {
		t.Errorf("least-loaded on own counts p99 %v, most %d; random %v, %d: want under half the p99 and a shorter queue",
			own.P99, own.MaxQueue, random.P99, random.MaxQueue)
	}
}

func TestRoundRobinWithOneBalancerSpreadsEvenly(t *testing.T) {
	// Constant service times: round robin from one balancer gives every
	// server every S-th request, so at 50% no server ever holds more than a
	// few, while random piles up more.
	costs := []time.Duration{100 * time.Microsecond}
	c := Config{Balancers: 1, Servers: 20, Policy: RoundRobin, Utilisation: 0.5, Costs: costs, Requests: 100_000, Seed: 2}
	rr := sim(t, c)
	c.Policy = Random
	random := sim(t, c)
	if rr.MaxQueue >= random.MaxQueue || rr.P99 >= random.P99 {
		t.Errorf("round robin p99 %v, most %d; random %v, %d: want round robin lower on both", rr.P99, rr.MaxQueue, random.P99, random.MaxQueue)
	}
}

func TestSimulateRejectsBadConfig(t *testing.T) {
	good := Config{Balancers: 1, Servers: 1, Utilisation: 0.5, Costs: []time.Duration{time.Microsecond}, Requests: 100}
	if _, err := Simulate(good); err != nil {
		t.Fatalf("Simulate(%+v): %v", good, err)
	}
	for name, change := range map[string]func(*Config){
		"no balancer":     func(c *Config) { c.Balancers = 0 },
		"no server":       func(c *Config) { c.Servers = 0 },
		"utilisation 1":   func(c *Config) { c.Utilisation = 1 },
		"no costs":        func(c *Config) { c.Costs = nil },
		"zero cost":       func(c *Config) { c.Costs = []time.Duration{0} },
		"few requests":    func(c *Config) { c.Requests = 10 },
		"negative stale":  func(c *Config) { c.Stale = -1 },
		"unknown policy":  func(c *Config) { c.Policy = 7 },
		"negative warmup": func(c *Config) { c.Warmup = -1 },
	} {
		c := good
		change(&c)
		if _, err := Simulate(c); err == nil {
			t.Errorf("%s: Simulate(%+v) = nil error, want one", name, c)
		}
	}
}

func TestRunWritesTablesAndAPlot(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "herd.svg")
	var out bytes.Buffer
	args := []string{"-requests", "2000", "-utilisation", "0.5,0.9", "-shapes", "3x6,2x4", "-stale", "1ms", "-sweep", "0,5ms", "-svg", svg}
	if err := run(context.Background(), args, func(string) (string, bool) { return "", false }, &out); err != nil {
		t.Fatalf("run(%q): %v", args, err)
	}
	for _, want := range []string{"### 3 balancers x 6 servers", "### 2 balancers x 4 servers", "| least-loaded, 1ms stale |",
		"| two choices, live |", "### Staleness sweep: 3 balancers x 6 servers at 90% utilisation", "| 5ms |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	f, err := os.Open(svg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var doc struct {
		XMLName   xml.Name   `xml:"svg"`
		Polylines []struct{} `xml:"polyline"`
	}
	if err := xml.NewDecoder(f).Decode(&doc); err != nil {
		t.Fatalf("plot is not well-formed SVG: %v", err)
	}
	// 2 shapes x 3 panels x 8 variants (random, round robin, and live, own
	// counts and 1 ms for the other two).
	if len(doc.Polylines) != 48 {
		t.Errorf("plot has %d lines, want 48", len(doc.Polylines))
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-utilisation", "1.2"},
		{"-utilisation", ""},
		{"-shapes", "10by100"},
		{"-shapes", "0x4"},
		{"-stale", "soon"},
		{"-sweep", "-1ms"},
		{"-requests", "5"},
		{"-sweep-utilisation", "0"},
		{"extra"},
	} {
		err := run(context.Background(), args, func(string) (string, bool) { return "", false }, &bytes.Buffer{})
		if _, ok := errors.AsType[*cli.UsageError](err); !ok {
			t.Errorf("run(%q) = %v, want a *cli.UsageError", args, err)
		}
	}
	if err := run(context.Background(), []string{"-help"}, func(string) (string, bool) { return "", false }, &bytes.Buffer{}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("run(-help) = %v, want flag.ErrHelp", err)
	}
}
