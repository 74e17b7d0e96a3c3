package solver

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// addSeeds adds every line of every testdata/*.txt file to the corpus.
func addSeeds(f *testing.F) {
	f.Helper()
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files in testdata: %v", err)
	}
	for _, name := range files {
		fh, err := os.Open(name)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if line := sc.Text(); line != "" && line[0] != '#' {
				f.Add(line)
			}
		}
		fh.Close()
	}
	f.Add(strings.Repeat(".", 81))
	f.Add("12x")
}

func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		g, err := Parse(s)
		if err != nil {
			if g != (Grid{}) {
				t.Errorf("Parse(%q) = %v with error %v, want the zero grid", s, g, err)
			}
			return
		}
		want := strings.ReplaceAll(strings.TrimSpace(s), ".", "0")
		if got := g.String(); got != want {
			t.Fatalf("Parse(%q).String() = %q, want %q", s, got, want)
		}
		g2, err := Parse(g.String())
		if err != nil || g2 != g {
			t.Fatalf("Parse(Parse(%q).String()) = %v, %v; want %v", s, g2, err, g)
		}
	})
}

// fuzzPuzzles fuzzes check with the seed corpus (addSeeds) on every input
// that parses, giving it a context that ends after budget.
func fuzzPuzzles(f *testing.F, budget time.Duration, check func(ctx context.Context, t *testing.T, s string, g Grid)) {
	f.Helper()
	addSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		g, err := Parse(s)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		check(ctx, t, s, g)
	})
}

func FuzzSolve(f *testing.F) {
	fuzzPuzzles(f, 5*time.Second, func(ctx context.Context, t *testing.T, s string, g Grid) {
		r, err := SolveContext(ctx, g, 2)
		if err != nil {
			t.Skipf("SolveContext(%q) over budget: %v", s, err)
		}
		if r.Count < 0 || r.Count > 2 {
			t.Fatalf("SolveContext(%q, 2).Count = %d, want 0-2", s, r.Count)
		}
		if r.Count > 0 {
			checkSolution(t, g, r.Solution)
		}
		if r1 := Solve(g, 1); r1.Count != min(r.Count, 1) {
			t.Fatalf("Solve(%q, 1).Count = %d, but limit 2 found %d", s, r1.Count, r.Count)
		}
	})
}
