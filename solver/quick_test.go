package solver

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

func TestQuickAll(t *testing.T) {
	for _, f := range []string{"norvig_top95.txt", "norvig_hardest.txt", "puzzles3_magictour_top1465", "puzzles6_forum_hardest_1106", "puzzles7_serg_benchmark", "puzzles2_17_clue"} {
		fh, err := os.Open("../../../shared/data/solver/" + f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		n := 0
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || line[0] == '#' {
				continue
			}
			g, err := Parse(line)
			if err != nil {
				t.Fatal(err)
			}
			r := Solve(g, 2)
			want := 1
			if strings.Contains(f, "serg") {
				want = 2
			}
			if r.Count != want || !validSol(g, r.Solution) {
				t.Fatalf("%s %s: count %d sol %v", f, line, r.Count, r.Solution)
			}
			n++
		}
		t.Log(f, n)
	}
}

func validSol(g, s Grid) bool {
	for i := range g {
		if s[i] < 1 || s[i] > 9 || (g[i] != 0 && g[i] != s[i]) {
			return false
		}
	}
	return checkConflicts(&s) == nil
}
