package fcgi

import (
	"errors"
	"fmt"
	"testing"

	"sudoku-fcgi/solver"
)

// One classification serves the GET status and the batch answer alike.
func TestClassify(t *testing.T) {
	s := newTestService(t, cfg())
	_, parseErr := solver.Parse("12")
	for _, tt := range []struct {
		name   string
		err    error
		status int
		batch  string
	}{
		{"busy", errBusy, 503, "ServerTooBusy"},
		{"batch ended", fmt.Errorf("%w: %w", errBatchEnded, solver.ErrBudget), 503, "ServerTooBusy"},
		{"budget", solver.ErrBudget, 503, "error: solve budget exceeded"},
		{"parse", parseErr, 400, "error: " + parseErr.Error()},
		{"bad id", errBadID, 400, "error: " + errBadID.Error()},
		{"no solution", errNoSolution, 422, "NoSolution"},
		{"draining", errDraining, 503, "ServerTooBusy"},
		{"too large", tooLarge("big"), 413, "error: big"},
		{"panic", errPanic, 500, "error: internal error"},
		{"unknown", errors.New("disk on fire"), 500, "error: internal error"},
	} {
		o, msg := s.classify(tt.err)
		if got := outcomeStatus[o]; got != tt.status {
			t.Errorf("%s: classify(%v) = %v, status %d; want %d", tt.name, tt.err, o, got, tt.status)
		}
		if got := string(o.appendBatchAnswer(nil, msg)); got != tt.batch {
			t.Errorf("%s: batch answer %q, want %q", tt.name, got, tt.batch)
		}
	}
	for o := range numOutcomes {
		if outcomeStatus[o] == 0 {
			t.Errorf("outcome %v has no status", o)
		}
	}
}
