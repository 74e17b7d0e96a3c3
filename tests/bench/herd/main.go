// Command herd simulates B load balancers in front of S servers and measures
// how the way each balancer picks a server shapes the latency: random, round
// robin, least-loaded on load information that is d old, and two random
// choices on the same information (what nginx's "random two least_conn"
// does). Service times come from the solver's measured per-puzzle costs plus
// a fixed per-request overhead.
//
//	go run ./tests/bench/herd -svg tests/bench/herd/herd.svg > out/herd/table.md   (make herd)
//
// It prints Markdown tables (one per shape, and a staleness sweep) and writes
// the plot as SVG. The simulation is seeded: the same flags give the same
// figures on any machine. -measure writes a new cost table instead.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/solver"
)

func main() { cli.Main("herd", run) }

// shape is a number of balancers in front of a number of servers.
type shape struct{ balancers, servers int }

func (s shape) String() string {
	return fmt.Sprintf("%d balancers x %d servers", s.balancers, s.servers)
}

// variant is one policy with its staleness, one line of a plot.
type variant struct {
	policy Policy
	stale  time.Duration
	own    bool
}

func (v variant) String() string {
	switch {
	case v.policy == Random || v.policy == RoundRobin:
		return v.policy.String()
	case v.own:
		return v.policy.String() + ", own counts"
	case v.stale == 0:
		return v.policy.String() + ", live"
	}
	return fmt.Sprintf("%s, %v stale", v.policy, v.stale)
}

type options struct {
	costs     []time.Duration
	overhead  time.Duration
	requests  int
	utils     []float64
	shapes    []shape
	stale     []time.Duration
	sweep     []time.Duration
	sweepUtil float64
	svg       string
	parallel  int
	seed      uint64
}

func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout io.Writer) error {
	fs := cli.NewFlagSet("herd", "Simulates B balancers in front of S servers under four policies and prints p50/p99\nlatency and the busiest server's queue against utilisation.", stdout)
	fs.Engine = solver.Engine()
	var (
		o                                      options
		costsFile, utils, shapes, stale, sweep string
		doMeasure                              bool
		puzzles                                string
		seed                                   int64
	)
	fs.BoolVar(&doMeasure, "measure", false, "write a cost table measured on -puzzles to stdout instead of simulating")
	fs.StringVar(&puzzles, "puzzles", "tests/reliability/testdata/test1000,tests/reliability/testdata/hardest200", "comma-separated puzzle `files` for -measure")
	fs.StringVar(&costsFile, "costs", "", "cost table `file` (empty: the one built in, tests/bench/herd/testdata/costs.txt)")
	fs.DurationVar(&o.overhead, "overhead", 100*time.Microsecond, "service time every request costs besides its solve (FastCGI, HTTP parsing, encoding)")
	fs.IntVar(&o.requests, "requests", 1_000_000, "requests measured per point (a tenth as many more warm up first)")
	fs.StringVar(&utils, "utilisation", "0.5,0.6,0.7,0.8,0.9,0.95", "comma-separated offered loads, each in (0, 1)")
	fs.StringVar(&shapes, "shapes", "10x100,2x4", "comma-separated `BxS` shapes: B balancers in front of S servers")
	fs.StringVar(&stale, "stale", "1ms,10ms", "comma-separated ages of the load information in the main tables")
	fs.StringVar(&sweep, "sweep", "0,20us,50us,100us,200us,500us,1ms,2ms,5ms,10ms", "ages for the staleness sweep on the first shape (empty: no sweep)")
	fs.Float64Var(&o.sweepUtil, "sweep-utilisation", 0.9, "offered load of the staleness sweep")
	fs.StringVar(&o.svg, "svg", "", "write the plot to this SVG `file`")
	fs.IntVar(&o.parallel, "parallel", 2, "points simulated at once")
	fs.Int64Var(&seed, "seed", 1, "random seed")
	if err := fs.Parse(args, lookupEnv); err != nil {
		return err
	}
	if doMeasure {
		return measure(stdout, cli.SplitList(puzzles))
	}
	o.seed = uint64(seed)
	var err error
	if o.costs, err = loadCosts(costsFile); err != nil {
		return err
	}
	for i := range o.costs {
		o.costs[i] += o.overhead
	}
	if o.utils, err = parseUtils(utils); err != nil {
		return &cli.UsageError{Err: err}
	}
	if o.shapes, err = parseShapes(shapes); err != nil {
		return &cli.UsageError{Err: err}
	}
	if o.stale, err = parseDurations(stale); err != nil {
		return &cli.UsageError{Err: fmt.Errorf("-stale: %w", err)}
	}
	if o.sweep, err = parseDurations(sweep); err != nil {
		return &cli.UsageError{Err: fmt.Errorf("-sweep: %w", err)}
	}
	if o.requests < 100 || o.parallel < 1 || o.overhead < 0 {
		return &cli.UsageError{Err: errors.New("-requests must be at least 100, -parallel at least 1, -overhead not negative")}
	}
	if o.sweepUtil <= 0 || o.sweepUtil >= 1 {
		return &cli.UsageError{Err: fmt.Errorf("-sweep-utilisation %g outside (0, 1)", o.sweepUtil)}
	}
	return simulateAll(ctx, o, stdout)
}

func loadCosts(name string) ([]time.Duration, error) {
	if name == "" {
		return readCosts(strings.NewReader(costsTable))
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("opening cost table: %w", err)
	}
	defer f.Close()
	return readCosts(f)
}

// variants lists the lines of one plot: the two that read no load, then
// least-loaded and two choices on live information, on each balancer's own
// counts and at each staleness.
func variants(stale []time.Duration) []variant {
	vs := []variant{{policy: Random}, {policy: RoundRobin}}
	for _, p := range []Policy{LeastLoaded, TwoChoices} {
		vs = append(vs, variant{policy: p}, variant{policy: p, own: true})
		for _, d := range stale {
			if d > 0 {
				vs = append(vs, variant{policy: p, stale: d})
			}
		}
	}
	return vs
}

// grid holds one shape's results: stats[variant][utilisation].
type grid struct {
	shape    shape
	variants []variant
	utils    []float64
	stats    [][]Stats
}

// sweepResult is the staleness sweep: for each age, least-loaded and two
// choices at one utilisation, beside random.
type sweepResult struct {
	shape  shape
	util   float64
	ages   []time.Duration
	random Stats
	ll, tc []Stats
}

func simulateAll(ctx context.Context, o options, w io.Writer) error {
	vs := variants(o.stale)
	grids := make([]grid, len(o.shapes))
	var jobs []func() error
	for gi, sh := range o.shapes {
		g := &grids[gi]
		*g = grid{shape: sh, variants: vs, utils: o.utils, stats: make([][]Stats, len(vs))}
		for vi, v := range vs {
			g.stats[vi] = make([]Stats, len(o.utils))
			for ui, u := range o.utils {
				jobs = append(jobs, point(o, sh, v, u, &g.stats[vi][ui]))
			}
		}
	}
	var sw *sweepResult
	if len(o.sweep) > 0 {
		sw = &sweepResult{shape: o.shapes[0], util: o.sweepUtil, ages: o.sweep,
			ll: make([]Stats, len(o.sweep)), tc: make([]Stats, len(o.sweep))}
		jobs = append(jobs, point(o, sw.shape, variant{policy: Random}, sw.util, &sw.random))
		for i, d := range o.sweep {
			jobs = append(jobs, point(o, sw.shape, variant{policy: LeastLoaded, stale: d}, sw.util, &sw.ll[i]),
				point(o, sw.shape, variant{policy: TwoChoices, stale: d}, sw.util, &sw.tc[i]))
		}
	}
	if err := runJobs(ctx, jobs, o.parallel); err != nil {
		return err
	}
	fmt.Fprintf(w, "Service time: solve cost from the cost table (%d puzzles, mean %v) plus %v per request; %d requests per point (after %d warming up); seed %d.\n",
		len(o.costs), meanCost(o.costs)-o.overhead, o.overhead, o.requests, o.requests/10, o.seed)
	for _, g := range grids {
		writeGrid(w, g)
	}
	if sw != nil {
		writeSweep(w, *sw)
	}
	if o.svg != "" {
		f, err := os.Create(o.svg)
		if err != nil {
			return fmt.Errorf("creating plot: %w", err)
		}
		writeSVG(f, grids)
		if err := f.Close(); err != nil {
			return fmt.Errorf("writing plot: %w", err)
		}
	}
	return nil
}

func point(o options, sh shape, v variant, u float64, out *Stats) func() error {
	return func() error {
		st, err := Simulate(Config{
			Balancers: sh.balancers, Servers: sh.servers, Policy: v.policy, Stale: v.stale, Own: v.own,
			Utilisation: u, Costs: o.costs, Requests: o.requests, Warmup: o.requests / 10, Seed: o.seed,
		})
		if err != nil {
			return fmt.Errorf("%v, %v, utilisation %g: %w", sh, v, u, err)
		}
		*out = st
		return nil
	}
}

// runJobs runs the jobs on n goroutines and returns the first error, or the
// context's once it ends.
func runJobs(ctx context.Context, jobs []func() error, n int) error {
	next := make(chan func() error)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range n {
		wg.Go(func() {
			for job := range next {
				if err := job(); err != nil {
					once.Do(func() { first = err })
				}
			}
		})
	}
feed:
	for _, job := range jobs {
		select {
		case next <- job:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

func meanCost(c []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range c {
		sum += d
	}
	return sum / time.Duration(len(c))
}

func ms(d time.Duration) string { return strconv.FormatFloat(d.Seconds()*1000, 'f', 2, 64) }

func writeGrid(w io.Writer, g grid) {
	fmt.Fprintf(w, "\n### %v\n\nEach cell: p50 / p99 latency in ms, and the most requests ever at one server.\n\n| policy |", g.shape)
	for _, u := range g.utils {
		fmt.Fprintf(w, " %g%% |", u*100)
	}
	fmt.Fprint(w, "\n| --- |")
	for range g.utils {
		fmt.Fprint(w, " ---: |")
	}
	fmt.Fprintln(w)
	for vi, v := range g.variants {
		fmt.Fprintf(w, "| %v |", v)
		for _, st := range g.stats[vi] {
			fmt.Fprintf(w, " %s / %s, %d |", ms(st.P50), ms(st.P99), st.MaxQueue)
		}
		fmt.Fprintln(w)
	}
}

func writeSweep(w io.Writer, s sweepResult) {
	fmt.Fprintf(w, "\n### Staleness sweep: %v at %g%% utilisation\n\n", s.shape, s.util*100)
	fmt.Fprintf(w, "Random: p99 %s ms, most at one server %d.\n\n", ms(s.random.P99), s.random.MaxQueue)
	fmt.Fprintln(w, "| age of load information | least-loaded p99 ms | most at one server | two choices p99 ms | most at one server | least-loaded p99 / two choices p99 |")
	fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: | ---: |")
	herd := time.Duration(-1)
	for i, d := range s.ages {
		ll, tc := s.ll[i], s.tc[i]
		fmt.Fprintf(w, "| %v | %s | %d | %s | %d | %.1f |\n", d, ms(ll.P99), ll.MaxQueue, ms(tc.P99), tc.MaxQueue,
			float64(ll.P99)/float64(tc.P99))
		if herd < 0 && ll.P99 > s.random.P99 {
			herd = d
		}
	}
	if herd < 0 {
		fmt.Fprintf(w, "\nLeast-loaded never did worse than random up to %v.\n", s.ages[len(s.ages)-1])
		return
	}
	fmt.Fprintf(w, "\nLeast-loaded herds (p99 above random's) from %v of staleness on.\n", herd)
}

func parseUtils(s string) ([]float64, error) {
	var out []float64
	for _, f := range cli.SplitList(s) {
		u, err := strconv.ParseFloat(f, 64)
		if err != nil || u <= 0 || u >= 1 {
			return nil, fmt.Errorf("-utilisation: %q is not a number in (0, 1)", f)
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, errors.New("-utilisation: no value")
	}
	return out, nil
}

func parseShapes(s string) ([]shape, error) {
	var out []shape
	for _, f := range cli.SplitList(s) {
		b, srv, ok := strings.Cut(f, "x")
		nb, err1 := strconv.Atoi(b)
		ns, err2 := strconv.Atoi(srv)
		if !ok || err1 != nil || err2 != nil || nb < 1 || ns < 1 {
			return nil, fmt.Errorf("-shapes: %q is not BxS with B, S >= 1", f)
		}
		out = append(out, shape{nb, ns})
	}
	if len(out) == 0 {
		return nil, errors.New("-shapes: no value")
	}
	return out, nil
}

func parseDurations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range cli.SplitList(s) {
		d, err := time.ParseDuration(f)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%q is not a duration >= 0", f)
		}
		out = append(out, d)
	}
	return out, nil
}
