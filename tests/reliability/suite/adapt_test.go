package suite

import (
	"math"
	"testing"
	"time"
)

// Two workers of 2 slots each, scraped 1 s apart: in the first window
// they held 4 and 8 request seconds per second (12 over 4 slots: 3 per
// slot) and 10 waits took 0.5 s; in the second the first worker
// restarted (its counters went back) and only the second counts.
func TestWorkerWindows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w := func(at time.Duration, reqSum, waitSum, waits float64) scraped {
		return scraped{t0.Add(at), map[string]float64{
			"sudoku_fastcgi_request_seconds_total": reqSum, "sudoku_queue_wait_seconds_sum": waitSum,
			"sudoku_queue_wait_seconds_count": waits, "sudoku_pool_slots": 2,
		}}
	}
	rounds := []metricRound{
		{"a": w(0, 10, 1, 100), "b": w(0, 20, 2, 100)},
		{"a": w(time.Second, 14, 1.2, 104), "b": w(time.Second, 28, 2.3, 106)},
		{"a": w(2*time.Second, 1, 0, 1), "b": w(2*time.Second, 30, 2.3, 106)},
	}
	ws := workerWindows(rounds, []string{"a", "b"})
	if len(ws) != 2 {
		t.Fatalf("workerWindows = %+v, want 2 windows", ws)
	}
	if got := ws[0]; got.inFlightPerSlot != 3 || got.queueWait != 50*time.Millisecond || !got.from.Equal(t0) || !got.to.Equal(t0.Add(time.Second)) {
		t.Errorf("first window %+v, want 3 in flight per slot, 50ms wait, from t0 to t0 + 1 s", got)
	}
	if got := ws[1]; got.inFlightPerSlot != 1 || got.queueWait != 0 {
		t.Errorf("second window %+v, want only worker b: 2 request seconds over 2 slots, no wait", got)
	}
}

// The workers' busy 503s between two moments, whatever the order of the
// labels, from the last scrape at or before each moment.
func TestBusyBetween(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := func(at time.Duration, a, b float64) metricRound {
		return metricRound{
			"a": {t0.Add(at), map[string]float64{`sudoku_requests_total{outcome="too_busy",route="get"}`: a, `sudoku_requests_total{outcome="solved",route="get"}`: 1e6}},
			"b": {t0.Add(at), map[string]float64{`sudoku_requests_total{outcome="too_busy",route="get"}`: b, `sudoku_requests_total{outcome="too_busy",route="batch"}`: 1e6}},
		}
	}
	rounds := []metricRound{r(0, 1, 1), r(time.Second, 5, 2), r(2*time.Second, 9, 3), r(3*time.Second, 100, 100)}
	if got := busyBetween(rounds, []string{"a", "b"}, t0.Add(1500*time.Millisecond), t0.Add(2500*time.Millisecond)); got != 5 {
		t.Errorf("busyBetween = %v, want 4 + 1 (from the scrape at 1 s to the one at 2 s)", got)
	}
}

// An admitted rate read every 500 ms: it holds at 100, rises to 110
// 1.5 s after the event and falls to 90 at 3 s.
func TestGaugeMoveAndValues(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var rounds []metricRound
	for i, v := range []float64{100, 100, 100, 100, 110, 110, 90, 90} {
		rounds = append(rounds, metricRound{"e": {t0.Add(time.Duration(i) * 500 * time.Millisecond),
			map[string]float64{"sudoku_edge_admission_rate": v}}})
	}
	event := t0.Add(1500 * time.Millisecond)
	before, lo, hi, up, down := gaugeMove(rounds, "e", "sudoku_edge_admission_rate", event, 10*time.Second)
	if before != 100 || lo != 90 || hi != 110 || up != 500*time.Millisecond || down != 1500*time.Millisecond {
		t.Errorf("gaugeMove = %v, %v, %v, %v, %v; want 100, 90, 110, 500ms, 1.5s", before, lo, hi, up, down)
	}
	if _, _, _, up, down := gaugeMove(rounds, "e", "sudoku_edge_admission_rate", event, 400*time.Millisecond); up != -1 || down != -1 {
		t.Errorf("gaugeMove within 400ms: up %v, down %v; want -1, -1 (no move that soon)", up, down)
	}
	got := gaugeValues(rounds, "e", "sudoku_edge_admission_rate", t0, t0.Add(5*time.Second))
	want := []float64{100, 100, 110, 90, math.NaN()}
	if floatList(got) != floatList(want) {
		t.Errorf("gaugeValues = %v, want %v (the last of each second, NaN without one)", got, want)
	}
}

func TestSplitAndGoodputIn(t *testing.T) {
	var recs []record
	for i := range 40 {
		kind := kindOK
		if i%4 == 3 {
			kind = kindBusy
		}
		recs = append(recs, record{At: time.Duration(i) * 100 * time.Millisecond, Kind: kind})
	}
	if got := split(recs, 2*time.Second); len(got) != 20 || got[0].At != 2*time.Second {
		t.Errorf("split at 2 s: %d records from %v, want 20 from 2s", len(got), got[0].At)
	}
	if got := split(recs, time.Minute); got != nil {
		t.Errorf("split past the end = %v, want none", got)
	}
	if got := goodputIn(recs, time.Second, 3*time.Second); got != 7.5 {
		t.Errorf("goodputIn over 2 s = %v/s, want 15 answers / 2 s", got)
	}
}
