// Package suite is the reliability scenario suite: it brings the project's
// compose stack up under its own project name on loopback ports, measures
// the capacity C with `sudoku-load capacity`, then drives each scenario
// (overload, bursts, rolling restart, failover, hung worker, all workers
// down, nginx reloads, slow clients, hostile input, raw FastCGI abuse,
// client abort, internal endpoints) through the load engine
// (sudoku-fcgi/cmd/sudoku-load/load) and prints its figures and PASS/FAIL
// against the criteria that hold on any machine (checks.want). The bounds
// that depend on the machine's speed (checks.bound) are printed, and
// judged only in the benchmark run (Config.Bench), which lists them at
// the end. The last line is "N passed, N failed, N not run". The
// scenarios and criteria are described in tests/reliability/README.md.
package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"sudoku-fcgi/cmd/sudoku-load/load"
)

// Config is what a run of the suite is told; tests/reliability's flags
// set it.
type Config struct {
	Project          string // compose project name
	ComposeFile      string // the stack's compose file
	ComposeOverride  string // an extra compose file layered on top (debugging the suite)
	HTTPPort         int    // host ports (loopback) for nginx HTTP and HTTPS and the exporter
	HTTPSPort        int
	ExporterPort     int
	Workers          int    // worker replicas
	LoadBin          string // sudoku-load binary (built first)
	AbuseBin         string // raw FastCGI abuser, static linux (built first)
	Puzzles          string // puzzle file for load
	Hard             string // hard puzzles (client abort)
	Run, Skip        string // regexps selecting and leaving out scenarios
	Soak             bool   // run only the soak scenario
	BenchOverload    bool   // run only the overload's benchmark (bench.go)
	Bench            bool   // judge the speed-dependent bounds too (checks.bound)
	SoakDuration     time.Duration
	Via              string // where load goes: "direct" (nginx's compose-network address) or "published"
	TrustHost        bool   // exempt the host's address from nginx's per-client limits
	Keep             bool   // leave the stack running at the end
	Reuse            bool   // use an already running stack of this project
	OverloadDuration time.Duration
	Capacity         float64       // use this C instead of measuring it (debugging only)
	SLO              time.Duration // p99 bound of the capacity search (C)
	Isolate          bool          // the suite on CPU 0, the stack on the other cores
}

// ErrUsage is wrapped by errors in a Config, reported before anything ran.
var ErrUsage = errors.New("suite: bad configuration")

// ErrFailed is returned when a scenario failed or the run was interrupted.
var ErrFailed = errors.New("suite: scenarios failed")

// suite is the shared state the scenarios work with.
type suite struct {
	cfg     Config
	st      *stack
	out     io.Writer
	C       float64       // capacity in requests/s
	load    []load.Puzzle // the puzzle file, for the load engine
	puzzles []string      // the same as texts
	hard    []string
	nginx   nginxConf
	sloUsed time.Duration // the SLO C was measured at
	iso     isolation     // zero unless -isolate split the cores
	ref     references    // the saturations, measured before C
}

type result struct {
	name    string
	figures string
	pass    bool
	why     string // what failed, when it failed
	bounds  []bound
	elapsed time.Duration
}

type scenario struct {
	name string
	fn   func(ctx context.Context, s *suite) result
}

// Run runs the scenarios cfg selects against a fresh stack (or the running
// one, with Reuse) and writes their figures, a results table and the
// closing line to out. It returns an error wrapping ErrUsage for a bad
// Config, ErrFailed when a scenario failed, and any error that kept the
// suite from running.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	all := allScenarios()
	if cfg.Soak {
		all = []scenario{{"soak", soakScenario}}
	}
	if cfg.BenchOverload {
		all = []scenario{{"bench-overload", benchOverload}}
	}
	scenarios, skipped, err := selectScenarios(all, cfg.Run, cfg.Skip)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if cfg.Via != "direct" && cfg.Via != "published" {
		return fmt.Errorf("%w: -via %q: want direct or published", ErrUsage, cfg.Via)
	}
	var iso isolation
	if cfg.Isolate {
		if iso, err = isolate(); err != nil {
			return err
		}
	}
	began := time.Now()
	s := &suite{cfg: cfg, out: out, iso: iso}
	if err := s.prepare(ctx); err != nil {
		return err
	}
	if len(skipped) > 0 {
		fmt.Fprintf(out, "== not run (-skip %q): %s\n", cfg.Skip, strings.Join(skipped, ", "))
	}
	if err := s.up(ctx, began); err != nil {
		return err
	}
	if !cfg.Keep && !cfg.Reuse {
		defer s.st.down(context.Background())
	}
	if err := s.measure(ctx); err != nil {
		return err
	}
	results := s.runAll(ctx, scenarios)
	return s.report(ctx, results, skipped, began)
}

// prepare reads the puzzles and the nginx configuration and builds the
// tools the scenarios run.
func (s *suite) prepare(ctx context.Context) error {
	var err error
	if s.load, s.puzzles, err = readPuzzles(s.cfg.Puzzles); err != nil {
		return err
	}
	if _, s.hard, err = readPuzzles(s.cfg.Hard); err != nil {
		return err
	}
	if s.nginx, err = readNginxConf("nginx"); err != nil {
		fmt.Fprintf(s.out, "warning: %v (using nginx defaults)\n", err)
	}
	return buildTools(ctx, s.cfg, s.out)
}

// up brings the stack up (or takes the running one, with Reuse) and points
// the load at it; on failure it leaves nothing running.
func (s *suite) up(ctx context.Context, began time.Time) error {
	cfg, out := s.cfg, s.out
	s.st = newStack(cfg.Project, cfg.ComposeFile, cfg.HTTPPort, cfg.HTTPSPort, cfg.ExporterPort, cfg.Workers, out)
	s.st.trustHost = cfg.TrustHost
	logs, err := logsOverride(cfg.Project)
	if err != nil {
		return err
	}
	s.st.extraFiles = append(s.st.extraFiles, logs)
	if s.iso.stackN > 0 {
		f, err := s.iso.composeOverride(cfg.Project)
		if err != nil {
			return err
		}
		s.st.extraFiles = append(s.st.extraFiles, f)
		fmt.Fprintf(out, "== isolation: the suite and its attackers on CPU %s, the stack on CPU %s\n", loadCPU, s.iso.stackCPUs())
	}
	if cfg.ComposeOverride != "" {
		s.st.extraFiles = append(s.st.extraFiles, cfg.ComposeOverride)
	}
	fmt.Fprintf(out, "== stack: project %s, %s, compose %s\n", cfg.Project, s.st.baseURL, strings.Join(s.st.compose, " "))
	if cfg.Reuse {
		err = s.restore(ctx)
	} else {
		err = s.st.up(ctx)
	}
	if err == nil && cfg.Via == "direct" {
		if err = s.st.useDirect(ctx); err != nil {
			err = fmt.Errorf("-via direct: %w", err)
		}
	} else if err != nil {
		err = fmt.Errorf("bringing the stack up: %w", err)
	}
	if err != nil {
		if !cfg.Keep && !cfg.Reuse {
			s.st.down(context.Background())
		}
		return err
	}
	fmt.Fprintf(out, "== stack ready after %v; load goes to %s (published port %s)\n",
		time.Since(began).Round(time.Second), s.st.baseURL, s.st.publishedURL)
	s.liveNginxConf(ctx)
	fmt.Fprintf(out, "== nginx (%s): fastcgi_read_timeout %v, fastcgi_connect_timeout %v, max_fails %d, fail_timeout %v\n",
		s.nginx.source, s.nginx.readTimeout, s.nginx.connectTimeout, s.nginx.maxFails, s.nginx.failTimeout)
	return nil
}

// measure measures the references (the saturations), then sets C (given
// with Capacity, or measured) and prints both with their ratio.
func (s *suite) measure(ctx context.Context) error {
	s.measureReferences(ctx)
	if s.cfg.Capacity > 0 {
		s.C = s.cfg.Capacity
		s.sloUsed = s.cfg.SLO
		fmt.Fprintf(s.out, "== capacity C = %.0f req/s (given with -capacity)\n", s.C)
	} else {
		c, err := s.capacity(ctx)
		if err != nil {
			return fmt.Errorf("measuring capacity: %w", err)
		}
		s.C = c
	}
	fmt.Fprintf(s.out, "== C = %.0f req/s (p99 <= %v), saturation %.0f/s with 32 in flight, C / saturation = %.2f\n",
		s.C, s.sloUsed, s.ref.sat32, s.C/max(1, s.ref.sat32))
	return nil
}

// runAll runs the scenarios in turn, each on a stack with all workers up,
// and prints each one's verdict.
func (s *suite) runAll(ctx context.Context, scenarios []scenario) []result {
	if s.cfg.Bench {
		fmt.Fprintln(s.out, "== benchmark run: the figures marked [bench] are judged against their targets; a miss is a figure to record, not a failure")
	} else {
		fmt.Fprintln(s.out, "== figures marked [bench] depend on the machine's speed: measured here, judged by make bench-reliability (tests/reliability/RESULTS.md)")
	}
	var results []result
	for _, sc := range scenarios {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(s.out, "\n=== %s (C = %.0f req/s)\n", sc.name, s.C)
		t0 := time.Now()
		r := sc.fn(ctx, s)
		r.name = sc.name
		r.elapsed = time.Since(t0)
		s.printResult(r)
		results = append(results, r)
		// Every scenario leaves the stack as it found it: all workers up.
		if err := s.restore(ctx); err != nil {
			fmt.Fprintf(s.out, "    restoring the stack: %v\n", err)
		}
	}
	return results
}

// printResult prints a scenario's verdict and figures, why it failed, and
// in the benchmark run the bounds it missed.
func (s *suite) printResult(r result) {
	fmt.Fprintf(s.out, "--- %s %s (%v): %s\n", r.verdict(), r.name, r.elapsed.Round(time.Second), r.figures)
	if !r.pass {
		fmt.Fprintf(s.out, "    why: %s\n", r.why)
	}
	if s.cfg.Bench {
		for _, b := range r.bounds {
			if !b.met {
				fmt.Fprintf(s.out, "    bench missed: %s\n", b)
			}
		}
	}
}

func (r result) verdict() string {
	if r.pass {
		return "PASS"
	}
	return "FAIL"
}

// report prints the results table, in the benchmark run the bounds table,
// and the closing line. Only a failed want or an interrupted run is an
// error: a missed bound is a figure.
func (s *suite) report(ctx context.Context, results []result, skipped []string, began time.Time) error {
	out := s.out
	passed, failed := 0, 0
	fmt.Fprintf(out, "\n== results (C = %.0f req/s at p99 <= %v, load average %s, suite took %v)\n", s.C, s.sloUsed, loadAvg(), time.Since(began).Round(time.Second))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tresult\tfigures")
	for _, r := range results {
		if r.pass {
			passed++
		} else {
			failed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, r.verdict(), r.figures)
	}
	for _, name := range skipped {
		fmt.Fprintf(tw, "%s\tNOT RUN\t-skip %q\n", name, s.cfg.Skip)
	}
	tw.Flush()
	var bounds string
	if s.cfg.Bench {
		bounds = s.reportBounds(results)
	}
	if ctx.Err() != nil {
		failed++
		fmt.Fprintln(out, "interrupted")
	}
	fmt.Fprintf(out, "%d passed, %d failed, %d not run%s\n", passed, failed, len(skipped), bounds)
	if failed > 0 {
		return fmt.Errorf("%w: %d failed", ErrFailed, failed)
	}
	return nil
}

// reportBounds prints every bound of the results with its baseline,
// target and verdict, and returns the closing line's count of them.
func (s *suite) reportBounds(results []result) string {
	fmt.Fprintln(s.out, "\n== bounds (targets and figures: tests/reliability/RESULTS.md)")
	tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tfigure\tbaseline\ttarget\tresult")
	met, missed := 0, 0
	for _, r := range results {
		for _, b := range r.bounds {
			verdict := "met"
			if b.met {
				met++
			} else {
				missed++
				verdict = "MISSED"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.name, b.figure, b.baseline, b.target, verdict)
		}
	}
	tw.Flush()
	return fmt.Sprintf("; bounds: %d met, %d missed", met, missed)
}

// selectScenarios keeps the scenarios whose names match runRE (all when
// empty) and leaves out those matching skipRE, whose names it returns. A
// selection that leaves nothing to run is an error, not an empty pass.
func selectScenarios(all []scenario, runRE, skipRE string) (run []scenario, skipped []string, err error) {
	match := func(expr string) (func(string) bool, error) {
		if expr == "" {
			return nil, nil
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, err
		}
		return re.MatchString, nil
	}
	only, err := match(runRE)
	if err != nil {
		return nil, nil, fmt.Errorf("-run: %w", err)
	}
	skip, err := match(skipRE)
	if err != nil {
		return nil, nil, fmt.Errorf("-skip: %w", err)
	}
	for _, sc := range all {
		switch {
		case only != nil && !only(sc.name):
		case skip != nil && skip(sc.name):
			skipped = append(skipped, sc.name)
		default:
			run = append(run, sc)
		}
	}
	if len(run) == 0 {
		return nil, nil, fmt.Errorf("no scenario left to run (-run %q, -skip %q)", runRE, skipRE)
	}
	return run, skipped, nil
}

func allScenarios() []scenario {
	return []scenario{
		{"internal-endpoints", internalEndpoints},
		{"overload", overload},
		{"bursts", bursts},
		{"puzzle-mix", puzzleMix}, {"worker-join", workerJoin},
		{"rolling-restart", rollingRestart},
		{"failover", failover},
		{"hung-worker", hungWorker},
		{"all-workers-down", allWorkersDown},
		{"nginx-reload", nginxReload}, {"reload-overload", reloadOverload},
		{"nginx-master-kill", nginxMasterKill},
		{"log-stall", logStall},
		{"slow-clients", slowClients},
		{"hostile-input", hostileInput},
		{"fcgi-abuse", fcgiAbuse},
		{"client-abort", clientAbort},
	}
}

// readPuzzles reads a puzzle file for the engine and as plain texts.
func readPuzzles(path string) ([]load.Puzzle, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	ps, err := load.ReadPuzzles(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	texts := make([]string, len(ps))
	for i, p := range ps {
		texts[i] = p.Text
	}
	return ps, texts, nil
}

// buildTools builds sudoku-load and the static FastCGI abuser when missing.
func buildTools(ctx context.Context, cfg Config, out io.Writer) error {
	builds := []struct{ bin, pkg string }{
		{cfg.LoadBin, "./cmd/sudoku-load"},
		{cfg.AbuseBin, "./tests/reliability/fcgiabuse"},
	}
	for _, b := range builds {
		if err := os.MkdirAll(filepath.Dir(b.bin), 0o755); err != nil {
			return err
		}
		fmt.Fprintf(out, "== building %s\n", b.bin)
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", b.bin, b.pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building %s: %w", b.pkg, err)
		}
	}
	return nil
}

// restore brings every stopped, paused or exited worker back and waits
// until the stack serves again.
func (s *suite) restore(ctx context.Context) error {
	ids, err := s.st.containers(ctx, "sudoku", true)
	if err != nil {
		return err
	}
	st, err := s.st.inspect(ctx, ids...)
	if err != nil {
		return err
	}
	for _, c := range st {
		switch {
		case c.State.Paused:
			s.st.docker(ctx, "unpause", c.ID)
		case c.State.Status == "stopped" || c.State.Status == "exited" || c.State.Status == "created":
			s.st.docker(ctx, "start", c.ID)
		}
		if c.State.Status == "running" && !c.State.Paused {
			continue
		}
	}
	if err := s.st.waitReady(ctx, 60*time.Second); err != nil {
		return err
	}
	// Let the edge re-resolve the workers and nginx settle.
	return sleep(ctx, 3*time.Second)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// logsOverride writes a compose file that gives nginx a log large enough
// for the whole overload (up to about 1.5 million lines of about 600
// bytes; Docker's default here keeps 3 x 10 MB), so that the suite can
// read nginx's request times once, after the load (nginxRequests), and returns
// its path.
func logsOverride(project string) (string, error) {
	return writeOverride(project, "logs", `  nginx:
    logging:
      driver: json-file
      options:
        max-size: "200m"
        max-file: "5"
`)
}

// writeOverride writes a compose file of the given services, layered on
// the stack's, as <tmp>/<project>-<name>.yml and returns its path.
func writeOverride(project, name, services string) (string, error) {
	path := filepath.Join(os.TempDir(), project+"-"+name+".yml")
	body := "# written by tests/reliability\nversion: \"2.4\"\nservices:\n" + services
	return path, os.WriteFile(path, []byte(body), 0o644)
}
