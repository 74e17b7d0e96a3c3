package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"sudoku-fcgi/solver"
)

const (
	test1    = "000000010400000000020000000000050407008000300001090000300400200050100000000806000"
	test1Sol = "693784512487512936125963874932651487568247391741398625319475268856129743274836159"
	empty    = "................................................................................."
	// noSolution is the first puzzle of solver/testdata/nosolution.txt.
	noSolution = "000000000040000001000002030000003020001040000005000060030000004070080009620007000"
)

func noEnv(string) (string, bool) { return "", false }

func runCLI(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), args, noEnv, strings.NewReader(stdin), &out)
	return out.String(), err
}

func TestSolveLines(t *testing.T) {
	tests := []struct {
		name string
		args []string
		in   string
		want string
	}{
		{
			name: "plain",
			args: []string{"solve"},
			in:   test1 + "\n",
			want: test1Sol + "\n",
		},
		{
			name: "ids, comments, blank lines, CRLF, no final newline",
			args: []string{"solve"},
			in:   "# comment\n\na:" + test1 + "\r\n   \nb: " + test1,
			want: "a:" + test1Sol + "\nb:" + test1Sol + "\n",
		},
		{
			name: "malformed lines answer with an error and the run goes on",
			args: []string{"solve"},
			in:   "x:12\n" + test1[:5] + "x" + test1[6:] + "\n7000000070" + test1[10:] + "\n" + test1 + "\n",
			want: "x:error: got 2 cells, want 81\n" +
				"error: cell 6 (row 1, column 6): unexpected 'x'\n" +
				"error: row 1 has two 7s\n" +
				test1Sol + "\n",
		},
		{
			name: "no solution",
			args: []string{"solve", "-unique"},
			in:   "n:" + noSolution + "\n",
			want: "n:NoSolution\n",
		},
		{
			name: "unique and not unique, the API's words",
			args: []string{"solve", "-unique"},
			in:   test1 + "\ne:" + empty + "\n",
			want: test1Sol + " unique\ne:" + solver.Solve(solver.Grid{}, 2).Solution.String() + " not-unique\n",
		},
		{
			name: "an id holding ':' ends at the last one",
			args: []string{"solve"},
			in:   "2026-12-01T10:00:" + test1 + "\n",
			want: "2026-12-01T10:00:" + test1Sol + "\n",
		},
		{
			name: "line too long",
			args: []string{"solve"},
			in:   strings.Repeat("1", 10000) + "\n" + test1 + "\n",
			want: "error: line longer than 4096 bytes\n" + test1Sol + "\n",
		},
		{
			name: "line longer than the read buffer",
			args: []string{"solve"},
			in:   strings.Repeat("1", 200000) + "\n" + test1,
			want: "error: line longer than 4096 bytes\n" + test1Sol + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runCLI(t, tt.in, tt.args...)
			if err != nil {
				t.Fatalf("run(%q) error = %v", tt.args, err)
			}
			if got != tt.want {
				t.Errorf("run(%q) with input %q wrote\n%s\nwant\n%s", tt.args, tt.in, got, tt.want)
			}
		})
	}
}

// TestSolveJobsKeepOrder solves the solver's testdata on 1 and 4
// goroutines, from files, and wants the same lines in the same order.
func TestSolveJobsKeepOrder(t *testing.T) {
	files, err := filepath.Glob("../../solver/testdata/*.txt")
	if err != nil || len(files) < 3 {
		t.Fatalf("testdata files: %v, %v", files, err)
	}
	one, err := runCLI(t, "", append([]string{"solve", "-unique", "-jobs", "1"}, files...)...)
	if err != nil {
		t.Fatal(err)
	}
	four, err := runCLI(t, "", append([]string{"solve", "-unique", "-jobs", "4"}, files...)...)
	if err != nil {
		t.Fatal(err)
	}
	if one != four {
		t.Fatalf("-jobs 4 output differs from -jobs 1:\n%s\nwant\n%s", four, one)
	}
	lines := strings.Split(strings.TrimSuffix(one, "\n"), "\n")
	var n int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l != "" && l[0] != '#' {
				n++
			}
		}
	}
	if len(lines) != n {
		t.Fatalf("got %d answer lines, want %d", len(lines), n)
	}
}

// TestSolveStreams checks that an answer is written before the input ends:
// a pipe user sees each line answered as it goes in.
func TestSolveStreams(t *testing.T) {
	pr, pw := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"solve", "-jobs", "2"}, noEnv, pr, outW)
		outW.Close()
	}()
	buf := make([]byte, len(test1Sol)+1)
	for i := 0; i < 3; i++ {
		// Each write also starts the next line: the answer must not wait
		// for it to end.
		in := test1 + "\n" + test1[:40]
		if i > 0 {
			in = test1[40:] + "\n" + test1[:40]
		}
		if _, err := io.WriteString(pw, in); err != nil {
			t.Fatal(err)
		}
		readWithin(t, outR, buf, 10*time.Second)
		if string(buf) != test1Sol+"\n" {
			t.Fatalf("answer %d = %q, want %q", i, buf, test1Sol+"\n")
		}
	}
	io.WriteString(pw, test1[40:]+"\n")
	pw.Close()
	readWithin(t, outR, buf, 10*time.Second)
	if string(buf) != test1Sol+"\n" {
		t.Fatalf("last answer = %q, want %q", buf, test1Sol+"\n")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// readWithin fills buf from r or fails the test after d.
func readWithin(t *testing.T, r io.Reader, buf []byte, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(r, buf)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(d):
		t.Fatalf("no answer within %v: output is not flushed while input waits", d)
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{name: "no command", args: nil, want: "no command given"},
		{name: "unknown command", args: []string{"frobnicate"}, want: `unknown command "frobnicate"`},
		{name: "bad flag", args: []string{"solve", "-x"}, want: "flag provided but not defined: -x"},
		{name: "zero jobs", args: []string{"solve", "-jobs", "0"}, want: "-jobs 0: want at least 1"},
		{name: "bad env", args: []string{"solve"}, env: map[string]string{"SUDOKU_JOBS": "many"}, want: `invalid value "many" for $SUDOKU_JOBS`},
		{name: "missing file", args: []string{"solve", "/nonexistent/puzzles.txt"}, want: "no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookupEnv := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			err := run(context.Background(), tt.args, lookupEnv, strings.NewReader(""), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run(%q) error = %v, want one containing %q", tt.args, err, tt.want)
			}
		})
	}
}

func TestReadError(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"solve"}, noEnv, iotest.TimeoutReader(strings.NewReader(test1+"\n")), &out)
	if err == nil {
		t.Fatalf("run with a failing reader: error = nil, want one (output %q)", out.String())
	}
}

func TestEnvTwins(t *testing.T) {
	env := map[string]string{"SUDOKU_UNIQUE": "true", "SUDOKU_JOBS": "3"}
	var out bytes.Buffer
	err := run(context.Background(), []string{"solve"}, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, strings.NewReader(test1+"\n"), &out)
	if err != nil || out.String() != test1Sol+" unique\n" {
		t.Fatalf("run with SUDOKU_UNIQUE=true = %q, %v; want %q", out.String(), err, test1Sol+" unique\n")
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"solve", "-h"}} {
		out, err := runCLI(t, "", args...)
		if err != nil {
			t.Fatalf("run(%q) error = %v", args, err)
		}
		for _, want := range []string{"Usage: sudoku", "solve"} {
			if !strings.Contains(out, want) {
				t.Errorf("run(%q) wrote %q, want it to contain %q", args, out, want)
			}
		}
	}
	out, _ := runCLI(t, "", "solve", "-h")
	for _, want := range []string{"Example:", "-unique", "$SUDOKU_JOBS", "$SUDOKU_UNIQUE", "[FILE...]", "-version", "error: got 2 cells, want 81"} {
		if !strings.Contains(out, want) {
			t.Errorf("sudoku solve -h does not mention %q:\n%s", want, out)
		}
	}
}

// sudoku -version names the solver engine the binary was built with.
func TestVersionNamesTheEngine(t *testing.T) {
	out, err := runCLI(t, "", "-version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "sudoku, version ") || !strings.Contains(out, "\n  engine:           "+solver.Engine()+"\n") {
		t.Errorf("sudoku -version = %q, want the version block and engine %q", out, solver.Engine())
	}
}
