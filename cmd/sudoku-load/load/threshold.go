package load

import (
	"fmt"
	"strings"
	"time"
)

// Thresholds are limits on a Result that decide whether a run passed, as
// k6's thresholds do. The zero value checks nothing.
type Thresholds struct {
	// MaxP99, if > 0, is the highest p99 latency over every answer.
	MaxP99 time.Duration
	// MaxErrorRatio, if >= 0, is the highest share of sent requests that
	// failed in any way (503s and wrong answers included). Set it to a
	// negative number to check nothing.
	MaxErrorRatio float64
	// MaxWrong, if >= 0, is the most wrong answers. Set it to a negative
	// number to check nothing.
	MaxWrong int64
}

// NoThresholds checks nothing.
var NoThresholds = Thresholds{MaxErrorRatio: -1, MaxWrong: -1}

// A Breach is one threshold a Result broke, with the measured value.
type Breach struct {
	Name     string `json:"name"` // "max-p99", "max-error-ratio" or "max-wrong"
	Measured string `json:"measured"`
	Limit    string `json:"limit"`
}

func (b Breach) String() string {
	return fmt.Sprintf("%s: measured %s, limit %s", b.Name, b.Measured, b.Limit)
}

// Check returns every threshold r breaks, in a fixed order.
func (t Thresholds) Check(r *Result) []Breach {
	var out []Breach
	if p99 := time.Duration(r.Latency.P99 * 1e6); t.MaxP99 > 0 && p99 > t.MaxP99 {
		out = append(out, Breach{"max-p99", ms(r.Latency.P99), t.MaxP99.String()})
	}
	if er := r.ErrorRatio(); t.MaxErrorRatio >= 0 && er > t.MaxErrorRatio {
		out = append(out, Breach{"max-error-ratio", fmt.Sprintf("%g (%d of %d)", er, r.ErrorCount(), r.Sent), fmt.Sprint(t.MaxErrorRatio)})
	}
	if t.MaxWrong >= 0 && r.Wrong > t.MaxWrong {
		out = append(out, Breach{"max-wrong", fmt.Sprint(r.Wrong), fmt.Sprint(t.MaxWrong)})
	}
	return out
}

// exitThreshold is the exit status of a run that completed but broke a
// threshold (as k6's); cli.Main exits with it through ExitCode.
const exitThreshold = 3

// ThresholdError is the error of a run that broke thresholds.
type ThresholdError struct{ Breaches []Breach }

// ExitCode is exitThreshold.
func (e *ThresholdError) ExitCode() int { return exitThreshold }

func (e *ThresholdError) Error() string {
	s := make([]string, len(e.Breaches))
	for i, b := range e.Breaches {
		s[i] = b.String()
	}
	return "threshold failed: " + strings.Join(s, "; ")
}

// Err returns a *ThresholdError if r breaks any threshold, else nil.
func (t Thresholds) Err(r *Result) error {
	if b := t.Check(r); len(b) > 0 {
		return &ThresholdError{b}
	}
	return nil
}
