package solver

import "testing"

func TestSolveTest1(t *testing.T) {
	g, err := Parse("000000010400000000020000000000050407008000300001090000300400200050100000000806000")
	if err != nil {
		t.Fatal(err)
	}
	r := Solve(g, 2)
	if r.Count != 1 {
		t.Fatalf("Count = %d, want 1", r.Count)
	}
	t.Log(r.Solution)
}
