// Command sudoku solves Sudoku puzzles from files or standard input.
//
//	sudoku solve [-unique] [-j N] [FILE...]
//
// It reads one puzzle per line and writes one line per puzzle, in input
// order. Run `sudoku solve -h` for the details.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sudoku:", err)
		os.Exit(1)
	}
}

const usage = `Usage: sudoku <command> [arguments]

Commands:
  solve    solve puzzles, one per line, from files or standard input

Run 'sudoku solve -h' for the solve command's flags and an example.
`

// run is the whole command; main only wires the process to it. stdin is
// where solve reads when it is given no file.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return fmt.Errorf("no command given")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "solve":
		return runSolve(ctx, args[1:], getenv, stdin, stdout)
	default:
		return fmt.Errorf("unknown command %q (run 'sudoku -h')", args[0])
	}
}
