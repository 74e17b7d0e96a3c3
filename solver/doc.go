// Package solver parses and solves 9x9 Sudoku puzzles.
//
// It uses only the standard library, keeps no mutable global state, never
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
// Built with GOEXPERIMENT=simd on amd64 (and without the purego tag), the
// package also holds a vector engine (simd_amd64.go) that closes all
// digits at once in 256-bit vectors and runs when the CPU has AVX2; it
// finds the same solutions with the same guesses, but is slower than the
// scalar engine (see RESULTS.md). Engine says which engine Solve runs; a
// plain build has only the scalar one.
package solver
