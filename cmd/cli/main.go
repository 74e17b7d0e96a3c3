package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Runner is what a command's main hands over to: the context ends on SIGINT
// or SIGTERM; args are the arguments after the program's name; lookupEnv and
// stdout are os.LookupEnv and os.Stdout, so tests can call it with their own.
type Runner func(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout io.Writer) error

// Main runs run for the command called name and exits with exitCode's
// status, after run has returned and its context is released, so every
// deferred cleanup of run has happened. It first fills the version from
// the build information Go stamps in (see stampVersion).
func Main(name string, run Runner) {
	stampVersion()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout)
	stop()
	os.Exit(exitCode(name, err, os.Stderr))
}

// An ExitCoder is an error that carries the status to exit with: a child
// process's own (sudoku-edge exits with nginx's), or a run that completed
// but broke a threshold (sudoku-load).
type ExitCoder interface {
	error
	ExitCode() int
}

// exitCode maps run's error to an exit status and prints every error to
// stderr: 0 on success or after -help and -version; 2 on a usage error
// reported before anything ran (see UsageError); the status of an
// ExitCoder that err wraps; 1 on any other error.
func exitCode(name string, err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	if errors.As(err, new(*UsageError)) {
		return 2
	}
	if ec, ok := errors.AsType[ExitCoder](err); ok {
		return ec.ExitCode()
	}
	return 1
}

// A UsageError is a command line or environment that the command cannot
// run with; Main exits 2 on it.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }
