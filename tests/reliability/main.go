// Command sudoku-reliability runs the reliability scenario suite
// (tests/reliability/suite) against the project's compose stack, under its
// own project name on loopback ports 25080/25443/25113, and prints each
// scenario's figures and verdict. The last line is "N passed, N failed, N
// not run" (with -bench, then the bounds met and missed); the exit status
// is 1 when any scenario failed, 2 on bad flags. A missed bound is a
// figure, never a failure. Every flag has an environment twin,
// $SUDOKU_RELIABILITY_<FLAG>.
//
// Usage (from the repository root; `make test-reliability` runs every
// scenario, `make bench-reliability` runs them with -bench):
//
//	go run ./tests/reliability [-run REGEXP] [-skip REGEXP] [-bench] [-soak] [-keep]
package main

import (
	"context"
	"errors"
	"io"
	"time"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/tests/reliability/suite"
)

const name = "sudoku-reliability"

func main() { cli.Main(name, run) }

func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout io.Writer) error {
	var c suite.Config
	fs := cli.NewFlagSet(name, "Runs the reliability scenarios against a fresh compose stack and judges each against its criteria (tests/reliability/README.md).", stdout)
	fs.StringVar(&c.Project, "project", "sudoku-reliability", "compose project name")
	fs.StringVar(&c.ComposeFile, "compose-file", "docker-compose.yml", "compose file")
	fs.StringVar(&c.ComposeOverride, "compose-override", "", "extra compose file layered on top (debugging the suite)")
	fs.IntVar(&c.Workers, "workers", 2, "worker replicas")
	fs.IntVar(&c.HTTPPort, "http-port", 25080, "host port for nginx HTTP (loopback)")
	fs.IntVar(&c.HTTPSPort, "https-port", 25443, "host port for nginx HTTPS (loopback)")
	fs.IntVar(&c.ExporterPort, "exporter-port", 25113, "host port for the exporter (loopback)")
	fs.StringVar(&c.LoadBin, "load", "out/sudoku-load", "sudoku-load binary (built first)")
	fs.StringVar(&c.AbuseBin, "abuse", "out/fcgiabuse", "raw FastCGI abuser binary, static linux (built first)")
	fs.StringVar(&c.Puzzles, "puzzles", "tests/reliability/testdata/test1000", "puzzle file for load")
	fs.StringVar(&c.Hard, "hard", "tests/reliability/testdata/hardest200", "hard puzzles (client abort)")
	fs.BoolVar(&c.Soak, "soak", false, "run only the soak scenario")
	fs.BoolVar(&c.Bench, "bench", false, "the benchmark run: judge the bounds that depend on the machine's speed against their targets and list them at the end; a miss is a figure, not a failure (tests/reliability/RESULTS.md)")
	fs.BoolVar(&c.BenchOverload, "bench-overload", false, "run only the overload's benchmark: CPU per answer and per rejection, the bound (1 - k r) / (1 - r) and the goodput at k = 2 and 3 (tests/bench/RESULTS.md)")
	fs.StringVar(&c.Run, "run", "", "run only scenarios matching this regexp")
	fs.StringVar(&c.Skip, "skip", "", "leave out scenarios matching this regexp (listed as not run in the results)")
	fs.DurationVar(&c.SoakDuration, "soak-duration", 10*time.Minute, "soak length")
	fs.StringVar(&c.Via, "via", "direct", "where load goes: direct (nginx's compose-network address) or published (the loopback port, through Docker's port proxy)")
	fs.BoolVar(&c.TrustHost, "trust-host", true, "exempt the host's address from nginx's per-client limits: the suite's load stands for many clients (slow and hostile clients run from containers with their own addresses)")
	fs.BoolVar(&c.Keep, "keep", false, "leave the stack running at the end")
	fs.BoolVar(&c.Reuse, "reuse", false, "use an already running stack of this project (no build, no teardown)")
	fs.DurationVar(&c.OverloadDuration, "overload-duration", 60*time.Second, "overload length")
	fs.Float64Var(&c.Capacity, "capacity", 0, "use this C instead of measuring it (debugging only)")
	fs.DurationVar(&c.SLO, "slo", 50*time.Millisecond, "p99 bound of the capacity search: C is the highest rate whose p99 stays within it")
	fs.BoolVar(&c.Isolate, "isolate", true, "run the suite and its attackers on CPU 0 and the stack on the other cores, so that the load never takes the stack's CPU (on 2 or more cores)")
	if err := fs.Parse(args, lookupEnv); err != nil {
		return err
	}
	err := suite.Run(ctx, c, stdout)
	if errors.Is(err, suite.ErrUsage) {
		return &cli.UsageError{Err: err}
	}
	return err
}
