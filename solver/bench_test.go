package solver

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
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

// BenchmarkSolve solves every puzzle of each shared data set once per
// iteration, at limit 1 and 2. Besides ns/op (a whole file) it reports
// us/puzzle (wall clock), cpu-us/puzzle (this process's CPU time, steadier
// on a shared machine) and guesses/puzzle (a property of the search, not of
// the machine). Run it with
//
//	go test -run '^$' -bench Solve -count 6 ./solver | tee new.txt
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
					sr := search{limit: limit}
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
	f, err := os.Open(filepath.Join(sharedData, "solver", name))
	if err != nil {
		b.Skipf("skipping: shared data not available: %v", err)
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
