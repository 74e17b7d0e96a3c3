package solver

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const test1 = "000000010400000000020000000000050407008000300001090000300400200050100000000806000"

func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // the grid's String, or "" for an error
		err      string // the whole error message, when an error is wanted
	}{
		{name: "zeros", in: test1, want: test1},
		{name: "dots", in: strings.ReplaceAll(test1, "0", "."), want: test1},
		{name: "surrounding white space", in: " \t" + test1 + "\r\n", want: test1},
		{name: "empty grid", in: strings.Repeat(".", 81), want: strings.Repeat("0", 81)},
		{name: "empty string", in: "", err: "got 0 cells, want 81"},
		{name: "short", in: test1[:80], err: "got 80 cells, want 81"},
		{name: "long", in: test1 + "0", err: "got 82 cells, want 81"},
		{name: "letter", in: test1[:11] + "x" + test1[12:], err: "cell 12 (row 2, column 3): unexpected 'x'"},
		{name: "inner space", in: test1[:40] + " " + test1[41:], err: "cell 41 (row 5, column 5): unexpected ' '"},
		{name: "invalid UTF-8", in: test1[:80] + "\xff", err: "cell 81 (row 9, column 9): unexpected byte 0xff"},
		{name: "non-ASCII letter", in: "é" + test1[2:], err: "cell 1 (row 1, column 1): unexpected 'é'"},
		{name: "bad character before wrong length", in: "12x4", err: "cell 3 (row 1, column 3): unexpected 'x'"},
		{name: "text after the grid", in: test1 + " x", err: "got 83 cells, want 81"},
		{name: "two 7s in a row", in: "7000000070" + strings.Repeat("0", 71), err: "row 1 has two 7s"},
		{name: "two 3s in a column", in: "3" + strings.Repeat("0", 8) + "3" + strings.Repeat("0", 71), err: "column 1 has two 3s"},
		{name: "two 5s in a box", in: "5" + strings.Repeat("0", 9) + "5" + strings.Repeat("0", 70), err: "box 1 has two 5s"},
		{name: "row 4 conflict", in: strings.Repeat("0", 27) + "7000000700" + strings.Repeat("0", 44), err: "row 4 has two 7s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Parse(tt.in)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err || !errors.Is(err, ErrInvalid) {
					t.Fatalf("Parse(%q) error = %v, want %q wrapping ErrInvalid", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q) error = %v", tt.in, err)
			}
			if got := g.String(); got != tt.want {
				t.Errorf("Parse(%q).String() = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSolveEdgeCases(t *testing.T) {
	solved := "693784512487512936125963874932651487568247391741398625319475268856129743274836159"
	tests := []struct {
		name  string
		grid  Grid
		limit int
		count int
		want  string // the solution, when it is known
	}{
		{name: "empty grid, limit 1", grid: Grid{}, limit: 1, count: 1},
		{name: "empty grid, limit 2 says multiple", grid: Grid{}, limit: 2, count: 2},
		{name: "limit 0 counts as 1", grid: Grid{}, limit: 0, count: 1},
		{name: "solved grid", grid: mustParse(t, solved), limit: 2, count: 1, want: solved},
		{name: "one blank", grid: mustParse(t, "0"+solved[1:]), limit: 2, count: 1, want: solved},
		{name: "test1", grid: mustParse(t, test1), limit: 2, count: 1, want: solved},
		{name: "two 7s in a row", grid: Grid{0: 7, 5: 7}, limit: 2, count: 0},
		{name: "two 1s in a column", grid: Grid{0: 1, 72: 1}, limit: 2, count: 0},
		{name: "two 9s in a box", grid: Grid{0: 9, 20: 9}, limit: 2, count: 0},
		{name: "value out of range", grid: Grid{40: 10}, limit: 2, count: 0},
		{name: "solved grid with a conflicting digit", grid: func() Grid { g := mustParse(t, solved); g[0] = 7; return g }(), limit: 2, count: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Solve(tt.grid, tt.limit)
			if r.Count != tt.count {
				t.Fatalf("Solve(%v, %d).Count = %d, want %d", tt.grid, tt.limit, r.Count, tt.count)
			}
			if r.Count > 0 {
				checkSolution(t, tt.grid, r.Solution)
			} else if r.Solution != (Grid{}) {
				t.Errorf("Solve(%v, %d).Solution = %v with Count 0, want zero grid", tt.grid, tt.limit, r.Solution)
			}
			if tt.want != "" && r.Solution.String() != tt.want {
				t.Errorf("Solve(%v, %d).Solution = %v, want %s", tt.grid, tt.limit, r.Solution, tt.want)
			}
		})
	}
}

// TestSolveTestdata runs the puzzles kept in testdata/, so the package is
// tested on a bare clone too.
func TestSolveTestdata(t *testing.T) {
	for file, count := range map[string]int{"unique.txt": 1, "multiple.txt": 2, "nosolution.txt": 0} {
		t.Run(file, func(t *testing.T) {
			puzzles := readPuzzles(t, filepath.Join("testdata", file))
			if len(puzzles) < 10 {
				t.Fatalf("%s: %d puzzles, want at least 10", file, len(puzzles))
			}
			for _, p := range puzzles {
				checkPuzzle(t, p, count)
			}
		})
	}
}

// setsDir is where the benchmark sets are read: testdata/sets holds every
// 24th puzzle of the 17-clue, 11+ and serg sets and the others whole;
// SOLVER_SETS may name a directory with the full sets (the same file
// names) instead.
func setsDir() string {
	if d := os.Getenv("SOLVER_SETS"); d != "" {
		return d
	}
	return filepath.Join("testdata", "sets")
}

// sets are the benchmark sets and their solution count at limit 2.
var sets = []struct {
	name  string
	count int
}{
	{"test1000", 1},
	{"norvig_hardest.txt", 1},
	{"norvig_top95.txt", 1},
	{"puzzles2_17_clue", 1},
	{"puzzles3_magictour_top1465", 1},
	{"puzzles5_forum_hardest_1905_11+", 1},
	{"puzzles6_forum_hardest_1106", 1},
	{"puzzles7_serg_benchmark", 2},
}

// TestSolveSets solves every puzzle of every set at limit 1 and 2 and
// checks the counts and the solutions. Under the race detector (about 10x
// slower) it takes an even sample of about 500 puzzles of each set.
func TestSolveSets(t *testing.T) {
	dir := setsDir()
	for _, f := range sets {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, f.name)
			if _, err := os.Stat(path); err != nil {
				path = filepath.Join("testdata", "sets", f.name) // not among the full sets
			}
			puzzles := readPuzzles(t, path)
			stride := 1
			if raceEnabled && len(puzzles) > 500 {
				stride = len(puzzles) / 500
			}
			for i := 0; i < len(puzzles); i += stride {
				checkPuzzle(t, puzzles[i], f.count)
			}
			t.Logf("%s: checked %d of %d puzzles", path, (len(puzzles)+stride-1)/stride, len(puzzles))
		})
	}
}

type puzzle struct {
	line string
	grid Grid
}

func readPuzzles(t testing.TB, path string) []puzzle {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []puzzle
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		g, err := Parse(line)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		out = append(out, puzzle{line, g})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkPuzzle solves p at limit 1 and 2 with each engine built (see
// engines) and wants count solutions at limit 2.
func checkPuzzle(t *testing.T, p puzzle, count int) {
	t.Helper()
	for _, asm := range engines() {
		r2, _ := solveWith(context.Background(), p.grid, 2, asm)
		if r2.Count != count {
			t.Fatalf("%s engine: Solve(%s, 2).Count = %d, want %d", engineLabel(asm), p.line, r2.Count, count)
		}
		r1, _ := solveWith(context.Background(), p.grid, 1, asm)
		if r1.Count != min(count, 1) {
			t.Fatalf("%s engine: Solve(%s, 1).Count = %d, want %d", engineLabel(asm), p.line, r1.Count, min(count, 1))
		}
		if count > 0 {
			checkSolution(t, p.grid, r1.Solution)
			checkSolution(t, p.grid, r2.Solution)
		}
		if count == 1 && r1.Solution != r2.Solution {
			t.Fatalf("%s engine: %s: limit 1 found %v, limit 2 found %v", engineLabel(asm), p.line, r1.Solution, r2.Solution)
		}
	}
}

// checkSolution fails unless sol is a complete, valid grid keeping every
// given of g. It checks on its own, without the package's code.
func checkSolution(t *testing.T, g, sol Grid) {
	t.Helper()
	for i := range 81 {
		if sol[i] < 1 || sol[i] > 9 {
			t.Fatalf("solution %v: cell %d holds %d", sol, i+1, sol[i])
		}
		if g[i] != 0 && g[i] != sol[i] {
			t.Fatalf("solution %v changes given %d at cell %d of %v", sol, g[i], i+1, g)
		}
	}
	for u := range 9 {
		var row, col, box [10]bool
		for k := range 9 {
			r := sol[u*9+k]
			c := sol[k*9+u]
			b := sol[(u/3*3+k/3)*9+u%3*3+k%3]
			if row[r] || col[c] || box[b] {
				t.Fatalf("solution %v repeats a digit in row, column or box %d", sol, u+1)
			}
			row[r], col[c], box[b] = true, true, true
		}
	}
}

func mustParse(t *testing.T, s string) Grid {
	t.Helper()
	g, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestSolveContext(t *testing.T) {
	t.Run("done context stops an endless count", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		// The empty grid has billions of solutions: only the budget ends this.
		r, err := SolveContext(ctx, Grid{}, 1<<62)
		if !errors.Is(err, ErrBudget) {
			t.Fatalf("SolveContext(cancelled, empty, huge) error = %v, want ErrBudget", err)
		}
		if r.Count == 0 {
			t.Errorf("SolveContext(cancelled, empty, huge).Count = 0, want the solutions found so far")
		}
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := SolveContext(ctx, Grid{}, 1<<62)
		if !errors.Is(err, ErrBudget) {
			t.Fatalf("SolveContext(20ms, empty, huge) error = %v, want ErrBudget", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("SolveContext(20ms, ...) returned after %v", d)
		}
	})
	t.Run("live context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g := mustParse(t, test1)
		r, err := SolveContext(ctx, g, 2)
		if err != nil || r != Solve(g, 2) {
			t.Fatalf("SolveContext(live, test1, 2) = %v, %v; want Solve's result, nil", r, err)
		}
	})
}

func TestSolveAllocs(t *testing.T) {
	hard := readPuzzles(t, "testdata/unique.txt")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, p := range []puzzle{hard[0], hard[len(hard)-1]} {
		if n := testing.AllocsPerRun(20, func() { Solve(p.grid, 2) }); n != 0 {
			t.Errorf("Solve(%s, 2) allocates %v times per run, want 0", p.line, n)
		}
		if n := testing.AllocsPerRun(20, func() { SolveContext(ctx, p.grid, 2) }); n != 0 {
			t.Errorf("SolveContext(%s, 2) allocates %v times per run, want 0", p.line, n)
		}
	}
}

// TestSolveConcurrent solves from many goroutines at once; run with -race.
func TestSolveConcurrent(t *testing.T) {
	puzzles := readPuzzles(t, "testdata/unique.txt")
	want := make([]Grid, len(puzzles))
	for i, p := range puzzles {
		want[i] = Solve(p.grid, 2).Solution
	}
	done := make(chan struct{})
	for w := 0; w < 8; w++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range puzzles {
				j := (i + w*7) % len(puzzles)
				if got := Solve(puzzles[j].grid, 2); got.Count != 1 || got.Solution != want[j] {
					t.Errorf("concurrent Solve(%s, 2) = %v, want %v", puzzles[j].line, got, want[j])
				}
			}
		}()
	}
	for w := 0; w < 8; w++ {
		<-done
	}
}
