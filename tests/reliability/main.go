// Command reliability runs the reliability scenario suite against the
// project's compose stack: it brings the stack up under its own project
// name on loopback ports 25080/25443/25113, measures the capacity C with
// `sudoku-load capacity`, then drives each scenario (overload, bursts,
// rolling restart, failover, hung worker, all workers down, nginx reloads,
// slow clients, hostile input, raw FastCGI abuse, client abort, internal
// endpoints) and prints its figures and PASS/FAIL against the criteria of
// issue 7. The last line is "N passed, N failed, N not run"; the exit
// status is 1 when any scenario failed.
//
// Usage (from the repository root; `make test-reliability` does this, and
// `make test-reliability-ci` with -skip '^overload$'):
//
//	go run ./tests/reliability [-run REGEXP] [-skip REGEXP] [-soak] [-keep]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code, err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "reliability:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

type config struct {
	project          string
	composeFile      string
	composeExtra     string
	httpPort         int
	httpsPort        int
	exporterPort     int
	workers          int
	loadBin          string
	abuseBin         string
	puzzles          string
	hard             string
	runRE            string
	skipRE           string
	soak             bool
	soakDuration     time.Duration
	keep             bool
	via              string
	trustHost        bool
	reuse            bool
	overloadDuration time.Duration
	capacityFixed    float64
	sloP99           time.Duration
	sloFallback      time.Duration
	isolate          bool
}

// suite is the shared state the scenarios work with.
type suite struct {
	cfg     config
	st      *stack
	out     io.Writer
	C       float64 // capacity in requests/s
	puzzles []string
	hard    []string
	nginx   nginxConf
	sloUsed time.Duration // the SLO C was measured at
	iso     isolation     // zero unless -isolate split the cores
}

type result struct {
	name    string
	figures string
	pass    bool
	why     string // what failed, when it failed
	elapsed time.Duration
}

type scenario struct {
	name string
	fn   func(ctx context.Context, s *suite) result
}

func run(ctx context.Context, args []string, out io.Writer) (int, error) {
	var cfg config
	fs := flag.NewFlagSet("reliability", flag.ContinueOnError)
	fs.StringVar(&cfg.project, "project", envOr("RELIABILITY_PROJECT", "sudoku-reliability"), "compose project name ($RELIABILITY_PROJECT)")
	fs.StringVar(&cfg.composeFile, "compose-file", "docker-compose.yml", "compose file")
	fs.StringVar(&cfg.composeExtra, "compose-override", "", "extra compose file layered on top (debugging the suite)")
	fs.IntVar(&cfg.httpPort, "http-port", 25080, "host port for nginx HTTP (loopback)")
	fs.IntVar(&cfg.httpsPort, "https-port", 25443, "host port for nginx HTTPS (loopback)")
	fs.IntVar(&cfg.exporterPort, "exporter-port", 25113, "host port for the exporter (loopback)")
	fs.IntVar(&cfg.workers, "workers", 2, "worker replicas")
	fs.StringVar(&cfg.loadBin, "load", "out/sudoku-load", "sudoku-load binary (built when missing)")
	fs.StringVar(&cfg.abuseBin, "abuse", "out/fcgiabuse", "raw FastCGI abuser binary, static linux (built when missing)")
	fs.StringVar(&cfg.puzzles, "puzzles", "tests/reliability/testdata/test1000", "puzzle file for load")
	fs.StringVar(&cfg.hard, "hard", "tests/reliability/testdata/hardest200", "hard puzzles (client abort)")
	fs.StringVar(&cfg.runRE, "run", "", "run only scenarios matching this regexp")
	fs.StringVar(&cfg.skipRE, "skip", "", "leave out scenarios matching this regexp (listed as not run in the results)")
	fs.BoolVar(&cfg.soak, "soak", false, "run only the soak scenario")
	fs.DurationVar(&cfg.soakDuration, "soak-duration", 10*time.Minute, "soak length")
	fs.StringVar(&cfg.via, "via", "direct", "where load goes: direct (nginx's compose-network address) or published (the loopback port, through Docker's port proxy)")
	fs.BoolVar(&cfg.trustHost, "trust-host", true, "exempt the host's address from nginx's per-client limits: the suite's load stands for many clients (slow and hostile clients run from containers with their own addresses)")
	fs.BoolVar(&cfg.keep, "keep", false, "leave the stack running at the end")
	fs.BoolVar(&cfg.reuse, "reuse", false, "use an already running stack of this project (no build, no teardown)")
	fs.DurationVar(&cfg.overloadDuration, "overload-duration", 60*time.Second, "overload length")
	fs.Float64Var(&cfg.capacityFixed, "capacity", 0, "use this C instead of measuring it (debugging only)")
	fs.DurationVar(&cfg.sloP99, "slo", 5*time.Millisecond, "p99 SLO for the capacity search")
	fs.BoolVar(&cfg.isolate, "isolate", true, "run the suite and its attackers on CPU 0 and the stack on the other cores, so that the load never takes the stack's CPU (on 2 or more cores)")
	fs.DurationVar(&cfg.sloFallback, "slo-fallback", 500*time.Millisecond, "p99 SLO for a second capacity search when no rate meets -slo (0: none)")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	all := allScenarios()
	if cfg.soak {
		all = []scenario{{"soak", soakScenario}}
	}
	scenarios, skipped, err := selectScenarios(all, cfg.runRE, cfg.skipRE)
	if err != nil {
		return 2, err
	}
	var iso isolation
	if cfg.isolate {
		if iso, err = isolate(); err != nil {
			return 1, err
		}
	}
	if cfg.via != "direct" && cfg.via != "published" {
		return 2, fmt.Errorf("-via %q: want direct or published", cfg.via)
	}
	began := time.Now()
	s := &suite{cfg: cfg, out: out, iso: iso}
	if s.puzzles, err = readPuzzles(cfg.puzzles); err != nil {
		return 1, err
	}
	if s.hard, err = readPuzzles(cfg.hard); err != nil {
		return 1, err
	}
	if s.nginx, err = readNginxConf("nginx"); err != nil {
		fmt.Fprintf(out, "warning: %v (using nginx defaults)\n", err)
	}
	if err := buildTools(ctx, cfg, out); err != nil {
		return 1, err
	}

	if len(skipped) > 0 {
		fmt.Fprintf(out, "== not run (-skip %q): %s\n", cfg.skipRE, strings.Join(skipped, ", "))
	}

	s.st = newStack(cfg.project, cfg.composeFile, cfg.httpPort, cfg.httpsPort, cfg.exporterPort, cfg.workers, out)
	s.st.trustHost = cfg.trustHost
	logs, err := logsOverride(cfg.project)
	if err != nil {
		return 1, err
	}
	s.st.extraFiles = append(s.st.extraFiles, logs)
	if iso.stackN > 0 {
		f, err := iso.composeOverride(cfg.project)
		if err != nil {
			return 1, err
		}
		s.st.extraFiles = append(s.st.extraFiles, f)
		fmt.Fprintf(out, "== isolation: the suite and its attackers on CPU %s, the stack on CPU %s\n", loadCPU, iso.stackCPUs())
	}
	if cfg.composeExtra != "" {
		s.st.extraFiles = append(s.st.extraFiles, cfg.composeExtra)
	}
	fmt.Fprintf(out, "== stack: project %s, %s, compose %s\n", cfg.project, s.st.baseURL, strings.Join(s.st.compose, " "))
	if cfg.reuse {
		err = s.restore(ctx)
	} else {
		err = s.st.up(ctx)
	}
	if err != nil {
		if !cfg.keep && !cfg.reuse {
			s.st.down(context.Background())
		}
		return 1, fmt.Errorf("bringing the stack up: %w", err)
	}
	if !cfg.keep && !cfg.reuse {
		defer s.st.down(context.Background())
	}
	if cfg.via == "direct" {
		if err := s.st.useDirect(ctx); err != nil {
			return 1, fmt.Errorf("-via direct: %w", err)
		}
	}
	fmt.Fprintf(out, "== stack ready after %v; load goes to %s (published port %s)\n",
		time.Since(began).Round(time.Second), s.st.baseURL, s.st.publishedURL)
	s.liveNginxConf(ctx)
	fmt.Fprintf(out, "== nginx (%s): fastcgi_read_timeout %v, fastcgi_connect_timeout %v, max_fails %d, fail_timeout %v\n",
		s.nginx.source, s.nginx.readTimeout, s.nginx.connectTimeout, s.nginx.maxFails, s.nginx.failTimeout)

	if cfg.capacityFixed > 0 {
		s.C = cfg.capacityFixed
		s.sloUsed = cfg.sloP99
		fmt.Fprintf(out, "== capacity C = %.0f req/s (given with -capacity)\n", s.C)
	} else {
		c, err := s.capacity(ctx)
		if err != nil {
			return 1, fmt.Errorf("measuring capacity: %w", err)
		}
		s.C = c
	}

	var results []result
	for _, sc := range scenarios {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(out, "\n=== %s (C = %.0f req/s)\n", sc.name, s.C)
		t0 := time.Now()
		r := sc.fn(ctx, s)
		r.name = sc.name
		r.elapsed = time.Since(t0)
		verdict := "PASS"
		if !r.pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(out, "--- %s %s (%v): %s\n", verdict, sc.name, r.elapsed.Round(time.Second), r.figures)
		if !r.pass {
			fmt.Fprintf(out, "    why: %s\n", r.why)
		}
		results = append(results, r)
		// Every scenario leaves the stack as it found it: all workers up.
		if err := s.restore(ctx); err != nil {
			fmt.Fprintf(out, "    restoring the stack: %v\n", err)
		}
	}

	passed, failed := 0, 0
	fmt.Fprintf(out, "\n== results (C = %.0f req/s at p99 <= %v, load average %s, suite took %v)\n", s.C, s.sloUsed, loadAvg(), time.Since(began).Round(time.Second))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tresult\tfigures")
	for _, r := range results {
		v := "PASS"
		if r.pass {
			passed++
		} else {
			failed++
			v = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, v, r.figures)
	}
	for _, name := range skipped {
		fmt.Fprintf(tw, "%s\tNOT RUN\t-skip %q\n", name, cfg.skipRE)
	}
	tw.Flush()
	if ctx.Err() != nil {
		failed++
		fmt.Fprintln(out, "interrupted")
	}
	fmt.Fprintf(out, "%d passed, %d failed, %d not run\n", passed, failed, len(skipped))
	if failed > 0 {
		return 1, nil
	}
	return 0, nil
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
		{"rolling-restart", rollingRestart},
		{"failover", failover},
		{"hung-worker", hungWorker},
		{"all-workers-down", allWorkersDown},
		{"nginx-reload", nginxReload},
		{"slow-clients", slowClients},
		{"hostile-input", hostileInput},
		{"fcgi-abuse", fcgiAbuse},
		{"client-abort", clientAbort},
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func readPuzzles(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ps []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if len(l) == 81 && !strings.HasPrefix(l, "#") {
			ps = append(ps, strings.ReplaceAll(l, ".", "0"))
		}
	}
	if len(ps) == 0 {
		return nil, errors.New("no puzzles in " + path)
	}
	return ps, nil
}

// buildTools builds sudoku-load and the static FastCGI abuser when missing.
func buildTools(ctx context.Context, cfg config, out io.Writer) error {
	builds := []struct{ bin, pkg string }{
		{cfg.loadBin, "./cmd/sudoku-load"},
		{cfg.abuseBin, "./tests/reliability/fcgiabuse"},
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
