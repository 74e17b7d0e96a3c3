// Package solver parses and solves 9x9 Sudoku puzzles.
//
// It keeps no mutable global state, never
// logs, and is safe for concurrent use: every call works on its own copy of
// the grid. Solve allocates nothing on the heap.
//
// A puzzle is 81 cells in row-major order: '1'-'9' are givens, '0' and '.'
// are blanks. Parse rejects anything else, and givens that conflict, with an
// error that wraps ErrInvalid and says what is wrong and where.
//
// The search keeps candidates as band bitboards (one 27-bit mask per digit
// and band of three rows), propagates each digit exactly within bands and
// stacks with table lookups, finds naked singles for a whole band with bit
// accumulators and triples in the three cells of a row or column within a
// box, and guesses on where a digit goes in a band (which box for each of
// its rows) by copying its 192-byte state. Limit 1 and limit 2 share one
// code path; see engine.go.
//
// On amd64 the propagation, most of the search's time, also comes in
// assembly (close_amd64.s: the closure of each changed digit with PEXT, its
// hidden singles and claims, and the naked singles with AVX2, looping to
// their fixpoint; and AVX2 kernels for minilines and the choice of guess),
// which Solve runs when the CPU has BMI1, BMI2 and AVX2; it finds the same
// solutions with the same guesses as the Go code (see RESULTS.md). The purego build
// tag, and every other architecture, keep the pure-Go scalar engine.
// Engine says which engine Solve runs.
package solver
