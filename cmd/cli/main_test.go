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

func TestExitCodeOfChild(t *testing.T) {
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
			if got := exitCode("sudoku-edge", tt.err, &stderr); got != tt.want {
				t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
			if printed := stderr.Len() > 0; printed != tt.printed {
				t.Errorf("exitCode(%v) printed %q, want printed=%v", tt.err, stderr.String(), tt.printed)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	var stderr bytes.Buffer
	if code := exitCode("sudoku-fcgi", nil, &stderr); code != 0 || stderr.Len() != 0 {
		t.Errorf("exitCode(nil) = %d, printed %q", code, stderr.String())
	}
	if code := exitCode("sudoku-fcgi", errors.New("listening: address in use"), &stderr); code != 1 {
		t.Errorf("exitCode(runtime error) = %d, want 1", code)
	}
	if got := stderr.String(); got != "sudoku-fcgi: listening: address in use\n" {
		t.Errorf("stderr = %q", got)
	}
}
