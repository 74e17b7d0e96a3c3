package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"testing"
)

type childExit struct{ code int }

func (e childExit) Error() string { return fmt.Sprintf("child exited with status %d", e.code) }
func (e childExit) ExitCode() int { return e.code }

func TestStatusCode(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		want    int
		printed bool
	}{
		{"success", nil, 0, false},
		{"help", flag.ErrHelp, 0, false},
		{"usage error", &UsageError{errors.New("bad flag")}, 2, true},
		{"plain error", errors.New("cannot listen"), 1, true},
		{"child status", fmt.Errorf("supervising: %w", childExit{3}), 3, true},
		{"child killed", childExit{143}, 143, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if got := statusCode("sudoku-edge", tt.err, &stderr); got != tt.want {
				t.Errorf("statusCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
			if printed := stderr.Len() > 0; printed != tt.printed {
				t.Errorf("statusCode(%v) printed %q, want printed=%v", tt.err, stderr.String(), tt.printed)
			}
		})
	}
}
