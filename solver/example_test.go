package solver_test

import (
	"context"
	"fmt"
	"time"

	"sudoku-fcgi/solver"
)

func ExampleParse() {
	_, err := solver.Parse("7000000070" + "00000000000000000000000000000000000000000000000000000000000000000000000")
	fmt.Println(err)
	_, err = solver.Parse("12x")
	fmt.Println(err)
	// Output:
	// row 1 has two 7s
	// cell 3 (row 1, column 3): unexpected 'x'
}

func ExampleSolve() {
	g, err := solver.Parse("000000010400000000020000000000050407008000300001090000300400200050100000000806000")
	if err != nil {
		fmt.Println(err)
		return
	}
	r := solver.Solve(g, 2) // limit 2: also prove the solution unique
	fmt.Println(r.Solution, r.Count == 1)
	// Output:
	// 693784512487512936125963874932651487568247391741398625319475268856129743274836159 true
}

func ExampleSolveContext() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	// Counting every solution of the empty grid never ends in time.
	_, err := solver.SolveContext(ctx, solver.Grid{}, 1<<62)
	fmt.Println(err)
	// Output:
	// solver: search budget exceeded
}
