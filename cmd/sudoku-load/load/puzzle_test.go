package load

import (
	"errors"
	"strings"
	"testing"

	"sudoku-fcgi/solver"
)

func TestReadPuzzles(t *testing.T) {
	in := "# comment\n\n" +
		"a1:000000010400000000020000000000050407008000300001090000300400200050100000000806000\n" +
		strings.Repeat(".", 79) + "12\n" +
		"t:10:00:000000010400000000020000000000050407008000300001090000300400200050100000000806000\n"
	ps, err := ReadPuzzles(strings.NewReader(in))
	if err != nil {
		t.Fatalf("ReadPuzzles: %v", err)
	}
	if len(ps) != 3 || ps[0].ID != "a1" || ps[1].ID != "4" || ps[2].ID != "t:10:00" {
		t.Fatalf("ReadPuzzles ids = %+v, want a1, 4 (the line number) and t:10:00 (split at the last ':')", ps)
	}
	if !strings.HasSuffix(ps[1].Text, "00012") || strings.Contains(ps[1].Text, ".") {
		t.Errorf("Text = %q, want blanks as 0", ps[1].Text)
	}

	for _, tc := range []struct{ name, in, want string }{
		{"short", "123\n", "line 1: got 3 cells"},
		{"bad cell", "\n" + strings.Repeat("0", 80) + "x\n", "line 2: cell 81"},
		{"empty", "# nothing\n", "no puzzles"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadPuzzles(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadPuzzles(%q) = %v, want an error containing %q", tc.in, err, tc.want)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	ps, sols := testPuzzles(t)
	p, sol := ps[0], sols[ps[0].Text]
	swap := []byte(sol)
	swap[0], swap[1] = swap[1], swap[0] // still digits, breaks a given or a column
	var other solver.Grid               // no givens: only validity counts
	// Line 1 of tests/reliability/testdata/test1000 and its solution.
	relPuzzle, err := solver.Parse("000000010400000000020000000000050407008000300001090000300400200050100000000806000")
	if err != nil {
		t.Fatal(err)
	}
	const relSolution = "693784512487512936125963874932651487568247391741398625319475268856129743274836159"
	relSwapped := relSolution[1:2] + relSolution[0:1] + relSolution[2:]
	for _, tc := range []struct {
		name   string
		puzzle solver.Grid
		answer string
		ok     bool
	}{
		{"solution", p.Grid, sol, true},
		{"no givens", other, sol, true},
		{"short", p.Grid, sol[:80], false},
		{"blank left", p.Grid, "0" + sol[1:], false},
		{"two cells swapped", other, string(swap), false},
		{"the puzzle itself", p.Grid, p.Text, false},
		{"another puzzle's solution", p.Grid, sols[ps[1].Text], false},
		{"reliability test puzzle", relPuzzle, relSolution, true},
		{"reliability test puzzle, swapped", relPuzzle, relSwapped, false},
		{"reliability test puzzle, short", relPuzzle, relSolution[:80], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := verify(tc.puzzle, tc.answer)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, errWrongAnswer)) {
				t.Errorf("verify(%s) = %v, want ok=%v", tc.name, err, tc.ok)
			}
		})
	}
}
