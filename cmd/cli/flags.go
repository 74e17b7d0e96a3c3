package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// A FlagSet is a flag.FlagSet whose flags have environment twins.
type FlagSet struct {
	*flag.FlagSet
	// Engine is the solver engine -version names (solver.Engine); a
	// binary without the solver leaves it empty.
	Engine  string
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

// envName returns the environment twin of the flag called name.
func (fs *FlagSet) envName(name string) string {
	return fs.prefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Parse parses args, then sets every flag not given in args from its
// environment twin as lookupEnv reports it. A twin that is set, even to the
// empty string, sets its flag: an empty value turns a string setting off
// (SUDOKU_FCGI_PPROF_LISTEN=) and is an invalid value for a number or a
// duration; only an unset twin leaves the default. Positional arguments are
// an error.
// Every error it returns is a *UsageError.
// After -help or -version, which it prints, it returns flag.ErrHelp: the
// caller exits 0 without doing anything else.
func (fs *FlagSet) Parse(args []string, lookupEnv func(string) (string, bool)) error {
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
		name := fs.envName(f.Name)
		if v, ok := lookupEnv(name); ok {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = &UsageError{fmt.Errorf("invalid value %q for $%s: %w", v, name, serr)}
			}
		}
	})
	if err != nil {
		return err
	}
	if fs.version {
		fmt.Fprintln(fs.Output(), Version(fs.Name(), fs.Engine))
		return flag.ErrHelp
	}
	return nil
}

// NonEmpty returns a *UsageError naming the first of the flags called names
// whose value is the empty string: an environment twin set to "" empties
// its flag (Parse), which settings without an empty meaning refuse here.
func (fs *FlagSet) NonEmpty(names ...string) error {
	for _, name := range names {
		f := fs.Lookup(name)
		if f == nil {
			panic("cli: NonEmpty of undefined flag -" + name)
		}
		if f.Value.String() == "" {
			return &UsageError{fmt.Errorf("-%s is empty ($%s): give a value or unset the variable for the default %s", name, fs.envName(name), quoteDefault(f))}
		}
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
			fmt.Fprintf(out, " ($%s)", fs.envName(f.Name))
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

// quoteDefault quotes the defaults of flags that hold a string, as the flag
// package does: a flag.Getter whose Get returns a string.
func quoteDefault(f *flag.Flag) string {
	if g, ok := f.Value.(flag.Getter); ok {
		if _, ok := g.Get().(string); ok {
			return fmt.Sprintf("%q", f.DefValue)
		}
	}
	return f.DefValue
}

// ParseFiles is Parse for a command that takes positional arguments after
// its flags (sudoku solve [flags] [FILE...]): it returns them instead of
// rejecting them. Everything else, env twins, -help and -version, is as in
// Parse.
func (fs *FlagSet) ParseFiles(args []string, lookupEnv func(string) (string, bool)) ([]string, error) {
	if err := fs.FlagSet.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &UsageError{err}
	}
	rest := fs.Args()
	// The flags given in args stay set, so the environment fills in only
	// the others.
	if err := fs.Parse(nil, lookupEnv); err != nil {
		return nil, err
	}
	return rest, nil
}

// SplitList returns the items of a comma-separated flag value, white space
// around each trimmed and empty ones dropped: " a, b ,," is [a b], and ""
// or "," is none. Every command splits its list flags with it, and the
// packages they hand the items to parse each item alone.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
