package main

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"sudoku-fcgi/cmd/sudoku-load/load"
	"sudoku-fcgi/solver"
)

// costsTable is the per-puzzle solve times measured on the build machine
// (written by -measure; see RESULTS.md for the command).
//
//go:embed testdata/costs.txt
var costsTable string

// readCosts parses a cost table: "# comment" lines, then one "set nanoseconds"
// line per puzzle.
func readCosts(r io.Reader) ([]time.Duration, error) {
	var out []time.Duration
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("cost table line %d: want \"set nanoseconds\", got %q", n, line)
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || ns <= 0 {
			return nil, fmt.Errorf("cost table line %d: %q is not a positive number of nanoseconds", n, f[1])
		}
		out = append(out, time.Duration(ns))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading cost table: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cost table has no costs")
	}
	return out, nil
}

// measure solves every puzzle of every file as the worker does (one
// solution) and writes its cost table: for each puzzle the median of five
// timings, each over enough repetitions to last at least 200 µs.
func measure(w io.Writer, files []string) error {
	fmt.Fprintf(w, "# per-puzzle solve time (ns), solver.Solve(g, 1), median of 5; go run ./tests/bench/herd -measure %s\n",
		strings.Join(files, " "))
	for _, name := range files {
		ps, err := readPuzzles(name)
		if err != nil {
			return err
		}
		set := filepath.Base(name)
		for _, p := range ps {
			fmt.Fprintf(w, "%s %d\n", set, solveTime(p.Grid).Nanoseconds())
		}
	}
	return nil
}

// readPuzzles reads a puzzle file with the load engine's reader, the one
// every tool of the project uses.
func readPuzzles(name string) ([]load.Puzzle, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("opening puzzles: %w", err)
	}
	defer f.Close()
	ps, err := load.ReadPuzzles(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return ps, nil
}

func solveTime(g solver.Grid) time.Duration {
	reps := 1
	for {
		start := time.Now()
		for range reps {
			solver.Solve(g, 1)
		}
		if time.Since(start) >= 200*time.Microsecond {
			break
		}
		reps *= 2
	}
	var runs [5]time.Duration
	for i := range runs {
		start := time.Now()
		for range reps {
			solver.Solve(g, 1)
		}
		runs[i] = time.Since(start) / time.Duration(reps)
	}
	slices.Sort(runs[:])
	return max(runs[2], time.Nanosecond)
}
