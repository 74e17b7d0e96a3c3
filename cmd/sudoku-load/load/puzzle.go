package load

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"sudoku-fcgi/solver"
)

// Puzzle is one line of a puzzle file.
type Puzzle struct {
	// ID is the line's "id:" prefix, or its 1-based line number.
	ID string
	// Text is the 81 cells as read (without the id).
	Text string
	// Grid is the parsed puzzle, used to check answers.
	Grid solver.Grid
}

// errNoPuzzles is returned by ReadPuzzles for input without any puzzle.
var errNoPuzzles = errors.New("load: no puzzles in input")

// ReadPuzzles reads one puzzle per line, "[id:]<81 cells>" with '0' or '.'
// for blanks (solver.ParseLine: the id ends at the last ':'). Blank lines and lines starting with '#' are skipped. A malformed
// line is an error that names its line number.
func ReadPuzzles(r io.Reader) ([]Puzzle, error) {
	var ps []Puzzle
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		id, hasID, g, err := solver.ParseLine(line)
		if !hasID {
			id = strconv.Itoa(n)
		}
		if err != nil {
			return nil, fmt.Errorf("reading puzzles: line %d: %w", n, err)
		}
		ps = append(ps, Puzzle{ID: id, Text: g.String(), Grid: g})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading puzzles: %w", err)
	}
	if len(ps) == 0 {
		return nil, errNoPuzzles
	}
	return ps, nil
}

// Errors returned by verify. They wrap errWrongAnswer.
var errWrongAnswer = errors.New("load: wrong answer")

// verify checks that answer is a complete valid grid (81 digits 1-9, each
// row, column and box holding every digit once) that keeps every given of
// puzzle. It does not solve anything: solver.Parse checks the cells and the
// conflicts, verify that no cell is blank and the givens stay.
func verify(puzzle solver.Grid, answer string) error {
	if len(answer) != 81 {
		return fmt.Errorf("%w: got %d cells, want 81", errWrongAnswer, len(answer))
	}
	g, err := solver.Parse(answer)
	if err != nil {
		return fmt.Errorf("%w: %w", errWrongAnswer, err)
	}
	for i, v := range g {
		if v == 0 {
			return fmt.Errorf("%w: cell %d is blank", errWrongAnswer, i+1)
		}
		if p := puzzle[i]; p != 0 && p != v {
			return fmt.Errorf("%w: cell %d is %d, the puzzle gives %d", errWrongAnswer, i+1, v, p)
		}
	}
	return nil
}
