package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// envFlagSet is a flag.FlagSet where every flag has an environment twin:
// SUDOKU_EDGE_ plus the flag name in upper case with '-' as '_'. A flag
// given on the command line wins over its variable.
type envFlagSet struct {
	*flag.FlagSet
}

func newEnvFlagSet(name string, out io.Writer) envFlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: %s [flags]\n\n", name)
		fmt.Fprintf(out, "Runs nginx in the foreground, keeps its upstream in step with the worker\n")
		fmt.Fprintf(out, "addresses and, when domains are given, its TLS certificates with ACME.\n\nFlags:\n")
		fs.VisitAll(func(f *flag.Flag) {
			typ, usage := flag.UnquoteUsage(f)
			fmt.Fprintf(out, "  -%s %s\n    \t%s (default %q) ($%s)\n", f.Name, typ, usage, f.DefValue, envName(f.Name))
		})
	}
	return envFlagSet{fs}
}

func envName(flagName string) string {
	return "SUDOKU_EDGE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parse parses args, then fills every flag not given on the command line
// from its environment variable, through the flag's own Set (so env values
// are validated exactly like flags).
func (fs envFlagSet) parse(args []string, getenv func(string) string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[f.Name] {
			return
		}
		name := envName(f.Name)
		if v := getenv(name); v != "" {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("invalid value %q for $%s: %w", v, name, serr)
			}
		}
	})
	return err
}
