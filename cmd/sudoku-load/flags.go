package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// envFlags defines flags whose defaults come from environment variables
// named SUDOKU_LOAD_<NAME> (upper case, '-' as '_'). A bad environment
// value is reported by Parse, as a bad flag would be.
type envFlags struct {
	fs     *flag.FlagSet
	getenv func(string) string
	errs   []error
}

func envName(name string) string {
	return "SUDOKU_LOAD_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// env returns the environment value for name and the usage suffix.
func (e *envFlags) env(name, usage string) (string, bool, string) {
	n := envName(name)
	v := e.getenv(n)
	return v, v != "", fmt.Sprintf("%s ($%s)", usage, n)
}

func (e *envFlags) bad(name, v string, err error) {
	e.errs = append(e.errs, fmt.Errorf("$%s=%q: %w", envName(name), v, err))
}

func (e *envFlags) String(p *string, name, def, usage string) {
	v, ok, u := e.env(name, usage)
	if ok {
		def = v
	}
	e.fs.StringVar(p, name, def, u)
}

func (e *envFlags) Int(p *int, name string, def int, usage string) {
	v, ok, u := e.env(name, usage)
	if ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			e.bad(name, v, err)
		}
		def = n
	}
	e.fs.IntVar(p, name, def, u)
}

func (e *envFlags) Float(p *float64, name string, def float64, usage string) {
	v, ok, u := e.env(name, usage)
	if ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			e.bad(name, v, err)
		}
		def = f
	}
	e.fs.Float64Var(p, name, def, u)
}

func (e *envFlags) Duration(p *time.Duration, name string, def time.Duration, usage string) {
	v, ok, u := e.env(name, usage)
	if ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			e.bad(name, v, err)
		}
		def = d
	}
	e.fs.DurationVar(p, name, def, u)
}

func (e *envFlags) Bool(p *bool, name string, def bool, usage string) {
	v, ok, u := e.env(name, usage)
	if ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			e.bad(name, v, err)
		}
		def = b
	}
	e.fs.BoolVar(p, name, def, u)
}

// Parse parses args and reports the first bad environment value or flag.
func (e *envFlags) Parse(args []string) error {
	if len(e.errs) > 0 {
		return e.errs[0]
	}
	return e.fs.Parse(args)
}
