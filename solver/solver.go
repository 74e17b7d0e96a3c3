package solver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Sentinel errors. Check them with errors.Is.
var (
	// ErrInvalid is wrapped by every error Parse returns.
	ErrInvalid = errors.New("solver: invalid puzzle")
	// ErrBudget is returned by SolveContext when the context ends before
	// the search does.
	ErrBudget = errors.New("solver: search budget exceeded")
)

// Grid is a puzzle or a solution: cell i (row i/9, column i%9) holds 0 for a
// blank or a digit 1-9.
type Grid [81]uint8

// String returns the grid as 81 characters, '0' for a blank.
func (g Grid) String() string {
	var b [81]byte
	for i, v := range g {
		b[i] = '0' + v
	}
	return string(b[:])
}

// parseError describes a malformed puzzle. It wraps ErrInvalid.
type parseError struct {
	msg string
}

func (e *parseError) Error() string        { return e.msg }
func (e *parseError) Is(target error) bool { return target == ErrInvalid }

// Parse reads an 81-cell puzzle, ignoring surrounding white space. The
// first character that is not a cell is reported before a wrong length.
func Parse(s string) (Grid, error) {
	var g Grid
	s = strings.TrimSpace(s)
	for i := 0; i < len(s) && i < 81; i++ {
		c := s[i]
		switch {
		case c >= '1' && c <= '9':
			g[i] = c - '0'
		case c == '0' || c == '.':
		default:
			where := fmt.Sprintf("cell %d (row %d, column %d)", i+1, i/9+1, i%9+1)
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n <= 1 {
				return Grid{}, &parseError{fmt.Sprintf("%s: unexpected byte 0x%02x", where, c)}
			}
			return Grid{}, &parseError{fmt.Sprintf("%s: unexpected %q", where, r)}
		}
	}
	if len(s) != 81 {
		return Grid{}, &parseError{fmt.Sprintf("got %d cells, want 81", len(s))}
	}
	if err := checkConflicts(&g); err != nil {
		return Grid{}, err
	}
	return g, nil
}

func checkConflicts(g *Grid) error {
	var rows, cols, boxes [9]uint16
	for i, v := range g {
		if v == 0 {
			continue
		}
		r, c, b := i/9, i%9, i/27*3+i%9/3
		bit := uint16(1) << v
		switch {
		case rows[r]&bit != 0:
			return &parseError{fmt.Sprintf("row %d has two %ds", r+1, v)}
		case cols[c]&bit != 0:
			return &parseError{fmt.Sprintf("column %d has two %ds", c+1, v)}
		case boxes[b]&bit != 0:
			return &parseError{fmt.Sprintf("box %d has two %ds", b+1, v)}
		}
		rows[r] |= bit
		cols[c] |= bit
		boxes[b] |= bit
	}
	return nil
}

// Result is the outcome of a search.
type Result struct {
	// Solution is the first solution found; valid only when Count > 0.
	Solution Grid
	// Count is the number of solutions found, at most the limit.
	Count int
}

// Solve searches for up to limit solutions (limit < 1 counts as 1). With
// limit 2, Count == 1 proves the solution unique. A grid with conflicting
// givens or a value over 9 has no solution. Solve does not allocate and is
// safe to call from many goroutines at once.
func Solve(g Grid, limit int) Result {
	r, _ := solve(context.Background(), g, limit)
	return r
}

// SolveContext is Solve that stops with ErrBudget once ctx is done. It
// looks at ctx every 128 guesses (well under a millisecond of search) and
// not at all when ctx can never be done. On ErrBudget the Result holds
// what was found so far.
func SolveContext(ctx context.Context, g Grid, limit int) (Result, error) {
	return solve(ctx, g, limit)
}

// Engine names the engine Solve runs: "asm-avx2" where the assembly engine
// is built (amd64, without the purego tag) and the CPU has BMI1, BMI2 and
// AVX2, else "scalar".
func Engine() string { return engineName() }
