// Command sudoku solves Sudoku puzzles from files or standard input.
//
//	sudoku solve [-unique] [-jobs N] [FILE...]
//
// It reads one puzzle per line and writes one line per puzzle, in input
// order. Run `sudoku solve -h` for the details. Every flag has an
// environment twin: -jobs is $SUDOKU_JOBS, -unique is $SUDOKU_UNIQUE.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/solver"
)

func main() {
	cli.Main("sudoku", func(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout io.Writer) error {
		return run(ctx, args, lookupEnv, os.Stdin, stdout)
	})
}

const usage = `Usage: sudoku <command> [arguments]

Commands:
  solve    solve puzzles, one per line, from files or standard input

Run 'sudoku solve -h' for the solve command's flags and an example,
'sudoku -version' for the version.
`

// run is the whole command; main only wires the process to it. stdin is
// where solve reads when it is given no file.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return &cli.UsageError{Err: fmt.Errorf("no command given")}
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "-version", "--version":
		fmt.Fprintln(stdout, cli.Version("sudoku", solver.Engine()))
		return nil
	case "solve":
		return runSolve(ctx, args[1:], lookupEnv, stdin, stdout)
	default:
		return &cli.UsageError{Err: fmt.Errorf("unknown command %q (run 'sudoku -h')", args[0])}
	}
}
