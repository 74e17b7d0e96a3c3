// Command sudoku-load measures the sudoku service: an in-process baseline
// (local), a whole file at once (batch), an open-loop fixed-rate load (load),
// raw-TCP stress (stress) and a capacity search against a p99 objective
// (capacity). Every answer is checked against its puzzle. The engine is
// package sudoku-fcgi/cmd/sudoku-load/load; this command only wires it.
//
//	sudoku-load load -url http://127.0.0.1:8080 -in puzzles.txt -rate 2000 -duration 30s
//
// Flags have environment twins named $SUDOKU_LOAD_<FLAG>. Reports go to
// stdout (text, or JSON with -json; an HTML page with -html FILE); progress
// and logs go to stderr as zerolog JSON.
//
// Thresholds (-max-wrong in every mode; -max-p99 and -max-error-ratio in
// load, batch and stress) set the exit status, as k6's do: 0 on success, 1
// when the run itself failed, 2 on a usage error, 3 when the run completed
// but broke a threshold (each broken one is printed with its measured value).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/cmd/sudoku-load/load"
	"sudoku-fcgi/solver"
)

const name = "sudoku-load"

const exitHelp = "Exit status: 0 success, 1 the run failed, 2 a usage error, 3 the run broke a threshold (-max-*)."

// main exits 3 on a *load.ThresholdError through its ExitCode.
func main() { cli.Main(name, run) }

// mode is one subcommand: it defines its flags on the set and returns the
// function that runs it. help, if set, follows the summary in -help.
type mode struct {
	summary string
	setup   func(fs *cli.FlagSet, c *common) func(ctx context.Context) (*load.Result, error)
	help    string
}

var modes = map[string]mode{
	"local":    {"solve a puzzle file in-process with N goroutines (the baseline)", setupLocal, ""},
	"batch":    {"send a whole puzzle file at once (GETs, or POSTs of -b lines) and wait for all answers", setupBatch, ""},
	"load":     {"open loop at a fixed rate, latency from each scheduled send time", setupLoad, ""},
	"stress":   {"write pipelined requests on raw TCP as fast as possible (-no-read: never read)", setupStress, ""},
	"capacity": {"find the highest rate whose p99 stays under -p99, by stepping and bisecting load runs", setupCapacity, capacityHelp},
}

func modeNames() []string { return slices.Sorted(maps.Keys(modes)) }

func usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s <mode> [flags]   (%[1]s <mode> -help for the flags of a mode)\n\nModes:\n", name)
	for _, n := range modeNames() {
		fmt.Fprintf(w, "  %-9s %s\n", n, modes[n].summary)
	}
}

func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout io.Writer) error {
	if len(args) == 0 {
		return &cli.UsageError{Err: fmt.Errorf("no mode given: want one of %s (see -help)", strings.Join(modeNames(), ", "))}
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return flag.ErrHelp
	case "-version", "--version":
		fmt.Fprintln(stdout, cli.Version(name, solver.Engine()))
		return flag.ErrHelp
	}
	m, ok := modes[args[0]]
	if !ok {
		return &cli.UsageError{Err: fmt.Errorf("unknown mode %q: want one of %s", args[0], strings.Join(modeNames(), ", "))}
	}
	summary := m.summary + "\n\n"
	if m.help != "" {
		summary += m.help + "\n\n"
	}
	summary += exitHelp
	fs := cli.NewFlagSet(name+" "+args[0], summary, stdout)
	fs.Engine = solver.Engine()
	c := newCommon(fs, args[0])
	runMode := m.setup(fs, c)
	if err := fs.Parse(args[1:], lookupEnv); err != nil {
		return err
	}
	return c.run(ctx, runMode, stdout)
}
