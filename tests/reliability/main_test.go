package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"

	"sudoku-fcgi/cmd/cli"
)

// -help lists every flag with its environment twin; bad flags and
// selections are usage errors, reported before anything runs.
func TestFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), []string{"-help"}, func(string) (string, bool) { return "", false }, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run(-help) = %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"Usage: sudoku-reliability [flags]", "-skip string", "($SUDOKU_RELIABILITY_SKIP)", "($SUDOKU_RELIABILITY_PROJECT)", "($SUDOKU_RELIABILITY_BENCH)", `(default "sudoku-reliability")`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-help lacks %q:\n%s", want, out.String())
		}
	}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-run", "("}, nil, "-run"},
		{[]string{"-skip", "."}, nil, "no scenario left to run"},
		{[]string{"-isolate=false", "-run", "bursts", "-via", "elsewhere"}, nil, `-via "elsewhere"`},
		{nil, map[string]string{"SUDOKU_RELIABILITY_WORKERS": "two"}, "$SUDOKU_RELIABILITY_WORKERS"},
	} {
		err := run(t.Context(), tc.args, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }, &bytes.Buffer{})
		if !errors.As(err, new(*cli.UsageError)) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q, %v) = %v, want a usage error containing %q", tc.args, tc.env, err, tc.want)
		}
	}
}
