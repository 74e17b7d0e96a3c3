package load

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestThresholdsCheck(t *testing.T) {
	res := func() *Result {
		return &Result{Sent: 1000, OK: 990, Wrong: 2, Errors: map[string]int64{"wrong": 2, "503_busy": 8}, Latency: Latency{P99: 4.5}}
	}
	for _, tc := range []struct {
		name string
		th   Thresholds
		want []string // names of the breaches
	}{
		{"none", NoThresholds, nil},
		{"zero value checks wrong answers and errors", Thresholds{}, []string{"max-error-ratio", "max-wrong"}},
		{"all within", Thresholds{MaxP99: 5 * time.Millisecond, MaxErrorRatio: 0.01, MaxWrong: 2}, nil},
		{"p99 at its limit", Thresholds{MaxP99: 4500 * time.Microsecond, MaxErrorRatio: -1, MaxWrong: -1}, nil},
		{"p99 above", Thresholds{MaxP99: 4 * time.Millisecond, MaxErrorRatio: -1, MaxWrong: -1}, []string{"max-p99"}},
		{"error ratio above", Thresholds{MaxErrorRatio: 0.001, MaxWrong: -1}, []string{"max-error-ratio"}},
		{"wrong above", Thresholds{MaxErrorRatio: -1, MaxWrong: 1}, []string{"max-wrong"}},
		{"all broken", Thresholds{MaxP99: time.Millisecond, MaxErrorRatio: 0, MaxWrong: 0}, []string{"max-p99", "max-error-ratio", "max-wrong"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, b := range tc.th.Check(res()) {
				got = append(got, b.Name)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%+v.Check = %v, want %v", tc.th, got, tc.want)
			}
			err := tc.th.Err(res())
			if (err != nil) != (len(tc.want) > 0) || (err != nil && !errors.As(err, new(*ThresholdError))) {
				t.Errorf("%+v.Err = %v, want a *ThresholdError iff a threshold broke", tc.th, err)
			}
		})
	}
}

// The error names each broken threshold with its measured value and limit.
func TestThresholdErrorMessage(t *testing.T) {
	r := &Result{Sent: 100, Wrong: 3, Errors: map[string]int64{"wrong": 3, "timeout": 2}, Latency: Latency{P99: 12.5}}
	err := Thresholds{MaxP99: 5 * time.Millisecond, MaxErrorRatio: 0.01, MaxWrong: 0}.Err(r)
	for _, want := range []string{"max-p99: measured 12.5ms, limit 5ms", "max-error-ratio: measured 0.05 (5 of 100), limit 0.01", "max-wrong: measured 3, limit 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Err = %v, want it to contain %q", err, want)
		}
	}
}
