package cli

import (
	"errors"
	"flag"
)

// ParseFiles is Parse for a command that takes positional arguments after
// its flags (sudoku solve [flags] [FILE...]): it returns them instead of
// rejecting them. Everything else, env twins, -help and -version, is as in
// Parse.
func (fs *FlagSet) ParseFiles(args []string, getenv func(string) string) ([]string, error) {
	if err := fs.FlagSet.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &UsageError{err}
	}
	rest := fs.Args()
	// The flags given in args stay set, so the environment fills in only
	// the others.
	if err := fs.Parse(nil, getenv); err != nil {
		return nil, err
	}
	return rest, nil
}
