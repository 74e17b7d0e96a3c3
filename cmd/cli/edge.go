package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// MainStatus is Main for a command that passes on the exit status of a
// process it supervises: when run's error, other than a usage error, wraps
// an error with an ExitCode() int method, the command exits with that
// status after printing the error. sudoku-edge exits with nginx's status.
func MainStatus(name string, run Runner) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	os.Exit(statusCode(name, err, os.Stderr))
}

// exitStatus is an error that carries the status to exit with, such as a
// child process's own.
type exitStatus interface {
	error
	ExitCode() int
}

func statusCode(name string, err error, stderr io.Writer) int {
	code := exitCode(name, err, stderr)
	if es, ok := errors.AsType[exitStatus](err); ok && code == 1 {
		return es.ExitCode()
	}
	return code
}
