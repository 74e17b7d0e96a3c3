// Package cli is what every command of the project shares at its edge: flags
// with environment twins, a -help that shows both, a -version flag, and the
// main that turns signals into a context and errors into exit codes.
//
// A flag's twin is the command's name and the flag's name in upper case with
// '-' as '_': sudoku-edge's -upstream-params is $SUDOKU_EDGE_UPSTREAM_PARAMS.
// A flag on the command line wins over its variable; a variable's value goes
// through the flag's own Set, so it is checked exactly as the flag would be.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/prometheus/common/version"
)

// A FlagSet is a flag.FlagSet whose flags have environment twins.
type FlagSet struct {
	*flag.FlagSet
	prefix  string
	summary string
	version bool
}

// NewFlagSet returns an empty FlagSet for command, which is a binary's name
// optionally followed by a mode ("sudoku-load batch"). The twins take their
// prefix from the binary's name. summary is the paragraph -help prints
// under the usage line; out receives -help and -version.
func NewFlagSet(command, summary string, out io.Writer) *FlagSet {
	binary, _, _ := strings.Cut(command, " ")
	fs := &FlagSet{
		FlagSet: flag.NewFlagSet(command, flag.ContinueOnError),
		prefix:  strings.ToUpper(strings.ReplaceAll(binary, "-", "_")) + "_",
		summary: summary,
	}
	fs.SetOutput(out)
	fs.Usage = fs.usage
	fs.BoolVar(&fs.version, "version", false, "print the version and exit")
	return fs
}

// EnvName returns the environment twin of the flag called name.
func (fs *FlagSet) EnvName(name string) string {
	return fs.prefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Parse parses args, then sets every flag not given in args from its
// environment twin as getenv reports it. Positional arguments are an error.
// Every error it returns is a *UsageError.
// After -help or -version, which it prints, it returns flag.ErrHelp: the
// caller exits 0 without doing anything else.
func (fs *FlagSet) Parse(args []string, getenv func(string) string) error {
	if err := fs.FlagSet.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &UsageError{err}
	}
	if fs.NArg() > 0 {
		return &UsageError{fmt.Errorf("unexpected argument %q (see -help)", fs.Arg(0))}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[f.Name] || f.Name == "version" {
			return
		}
		name := fs.EnvName(f.Name)
		if v := getenv(name); v != "" {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = &UsageError{fmt.Errorf("invalid value %q for $%s: %w", v, name, serr)}
			}
		}
	})
	if err != nil {
		return err
	}
	if fs.version {
		fmt.Fprintln(fs.Output(), version.Print(fs.Name()))
		return flag.ErrHelp
	}
	return nil
}

// usage prints the usage line, the summary and one entry per flag with its
// type, default (when it has one) and environment twin.
func (fs *FlagSet) usage() {
	out := fs.Output()
	fmt.Fprintf(out, "Usage: %s [flags]\n\n", fs.Name())
	if fs.summary != "" {
		fmt.Fprintf(out, "%s\n\n", strings.TrimSpace(fs.summary))
	}
	fmt.Fprintf(out, "Flags (each also read from the environment variable shown):\n")
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		line := "  -" + f.Name
		if typ != "" {
			line += " " + typ
		}
		fmt.Fprintf(out, "%s\n    \t%s", line, usage)
		if !isZeroDefault(f) {
			fmt.Fprintf(out, " (default %s)", quoteDefault(f))
		}
		if f.Name != "version" {
			fmt.Fprintf(out, " ($%s)", fs.EnvName(f.Name))
		}
		fmt.Fprintln(out)
	})
}

func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "0s", "false":
		return true
	}
	return false
}

// quoteDefault quotes string defaults, as the flag package does.
func quoteDefault(f *flag.Flag) string {
	if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
		return fmt.Sprintf("%q", f.DefValue)
	}
	return f.DefValue
}

// Runner is what a command's main hands over to: the context ends on SIGINT
// or SIGTERM; args are the arguments after the program's name; getenv and
// stdout are os.Getenv and os.Stdout, so tests can call it with their own.
type Runner func(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error

// Main runs run for the command called name and exits: 0 on success or after
// -help and -version, 2 on a usage error reported before anything ran (see
// UsageError), 1 on any other error, which it prints to stderr first.
func Main(name string, run Runner) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	os.Exit(exitCode(name, err, os.Stderr))
}

func exitCode(name string, err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(*UsageError)):
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	default:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
}

// A UsageError is a command line or environment that the command cannot
// run with; Main exits 2 on it.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }
