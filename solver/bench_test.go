package solver

import (
	"path/filepath"
	"strconv"
	"testing"
)

// benchSets are the sets the benchmark and RESULTS.md report.
var benchSets = []string{
	"puzzles2_17_clue",
	"puzzles3_magictour_top1465",
	"puzzles5_forum_hardest_1905_11+",
	"puzzles6_forum_hardest_1106",
}

// BenchmarkSolve solves every puzzle of each set (see setsDir) once per
// iteration, at limit 1 and 2. Besides ns/op (a whole file) it reports
// us/puzzle (wall clock), cpu-us/puzzle (this process's CPU time, steadier
// on a shared machine) and guesses/puzzle (a property of the search, not of
// the machine). Run it with
//
//	go test -run '^$' -bench Solve -count 10 ./solver | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkSolve(b *testing.B) {
	for _, name := range benchSets {
		puzzles := loadBench(b, name)
		for _, limit := range []int{1, 2} {
			b.Run(name+"/limit="+strconv.Itoa(limit), func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := cpuTime()
				for b.Loop() {
					for _, g := range puzzles {
						Solve(g, limit)
					}
				}
				n := float64(b.N * len(puzzles))
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/n, "us/puzzle")
				if cpu := cpuTime() - cpu0; cpu > 0 {
					b.ReportMetric(float64(cpu.Nanoseconds())/1e3/n, "cpu-us/puzzle")
				}
				var guesses int
				for _, g := range puzzles {
					sr := search{limit: limit, asm: asmEngine}
					sr.start(g)
					guesses += sr.guesses
				}
				b.ReportMetric(float64(guesses)/float64(len(puzzles)), "guesses/puzzle")
			})
		}
	}
}

func loadBench(b *testing.B, name string) []Grid {
	b.Helper()
	var out []Grid
	for _, p := range readPuzzles(b, filepath.Join(setsDir(), name)) {
		out = append(out, p.grid)
	}
	return out
}
