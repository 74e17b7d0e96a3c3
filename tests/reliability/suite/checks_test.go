package suite

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// A missed bound never fails a scenario: make test prints it marked
// [bench] with its target and baseline; the benchmark run (Bench) also
// reports it as missed and lists every bound. A failed want fails the
// scenario and the run in both.
func TestBoundsAndWants(t *testing.T) {
	scenario := func(wantOK bool) result {
		var c checks
		c.fig("sent %d", 100)
		c.want(wantOK, "2 requests failed")
		c.bound(true, ">= 0.4", "saturation 900/s with 32 in flight", "goodput %.2f of the saturation", 0.52)
		c.bound(false, "<= 50ms", "answers' p99 in nginx at 0.5 C 3.0ms", "p99 of the 503s in nginx %s", ms(80*time.Millisecond))
		r := c.result()
		r.name = "overload"
		return r
	}
	missed := "p99 of the 503s in nginx 80.0ms (target <= 50ms; baseline answers' p99 in nginx at 0.5 C 3.0ms)"
	for _, tc := range []struct {
		bench, wantOK bool
		err           error
		has, hasNot   []string
	}{
		{false, true, nil, []string{"--- PASS overload", "[bench] " + missed, "[bench] goodput 0.52 of the saturation (target >= 0.4;", "1 passed, 0 failed, 0 not run\n"},
			[]string{"bench missed", "MISSED", "== bounds"}},
		{true, true, nil, []string{"--- PASS overload", "    bench missed: " + missed, "== bounds", "MISSED", "1 passed, 0 failed, 0 not run; bounds: 1 met, 1 missed\n"},
			[]string{"why:"}},
		{false, false, ErrFailed, []string{"--- FAIL overload", "why: 2 requests failed", "[bench] " + missed, "0 passed, 1 failed, 0 not run\n"}, []string{"bench missed"}},
		{true, false, ErrFailed, []string{"--- FAIL overload", "why: 2 requests failed", "bench missed: " + missed, "0 passed, 1 failed, 0 not run; bounds: 1 met, 1 missed\n"}, nil},
	} {
		var out bytes.Buffer
		s := &suite{cfg: Config{Bench: tc.bench}, out: &out}
		r := scenario(tc.wantOK)
		s.printResult(r)
		err := s.report(t.Context(), []result{r}, nil, time.Now())
		if tc.err == nil && err != nil || tc.err != nil && !errors.Is(err, tc.err) {
			t.Errorf("bench %v, want ok %v: report = %v, want %v", tc.bench, tc.wantOK, err, tc.err)
		}
		for _, w := range tc.has {
			if !strings.Contains(out.String(), w) {
				t.Errorf("bench %v, want ok %v: output lacks %q:\n%s", tc.bench, tc.wantOK, w, out.String())
			}
		}
		for _, w := range tc.hasNot {
			if strings.Contains(out.String(), w) {
				t.Errorf("bench %v, want ok %v: output has %q:\n%s", tc.bench, tc.wantOK, w, out.String())
			}
		}
	}
}
