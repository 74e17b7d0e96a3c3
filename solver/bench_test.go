package solver

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchSets are the shared data files the issue sets targets for.
var benchSets = []string{
	"puzzles2_17_clue",
	"puzzles3_magictour_top1465",
	"puzzles5_forum_hardest_1905_11+",
	"puzzles6_forum_hardest_1106",
	"puzzles7_serg_benchmark",
}

// BenchmarkSolve solves every puzzle of each data set once per iteration at
// limit 1 and 2, and reports the mean time per puzzle.
func BenchmarkSolve(b *testing.B) {
	for _, name := range benchSets {
		puzzles := loadBench(b, name)
		for _, limit := range []int{1, 2} {
			b.Run(name+"/limit="+string(rune('0'+limit)), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					for _, g := range puzzles {
						Solve(g, limit)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(puzzles)), "us/puzzle")
			})
		}
	}
}

func loadBench(b *testing.B, name string) []Grid {
	b.Helper()
	f, err := os.Open(filepath.Join(sharedSolverData, name))
	if err != nil {
		b.Skipf("shared data not available: %v", err)
	}
	defer f.Close()
	var out []Grid
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		g, err := Parse(line)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		out = append(out, g)
	}
	return out
}

const sharedSolverData = "../../shared/data/solver"
