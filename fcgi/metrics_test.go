package fcgi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func promRegistry(t *testing.T, s *Service) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(s); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return reg
}

func TestMetricsLint(t *testing.T) {
	s := newTestService(t, cfg())
	reg := promRegistry(t, s)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("metric %s: %s", p.Metric, p.Text)
	}
	// Registering twice must fail loudly, not silently double count.
	if err := reg.Register(s); err == nil {
		t.Error("second Register succeeded, want an error")
	}
}

// Issue 30: /sudoku/stats and /metrics read the same counters, and the
// stats' batch_lines lists only outcomes a batch line can have.
func TestStatsAndMetricsAgree(t *testing.T) {
	s := newTestService(t, cfg())
	reg := promRegistry(t, s)
	serve(s, "GET", "/sudoku?puzzle="+easy, nil)
	serve(s, "GET", "/sudoku?puzzle="+dead, nil)
	serve(s, "GET", "/nope", nil)
	serve(s, "POST", "/sudoku", strings.NewReader(easy+"\nx:1\n"+dead+"\n"))
	w := serve(s, "GET", "/sudoku/stats", nil)
	var st statsJSON
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("stats body %q: %v", w.Body, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byOutcome := map[string]float64{} // requests_total summed over routes
	lines := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch mf.GetName() {
			case "sudoku_requests_total":
				byOutcome[labels["outcome"]] += m.GetCounter().GetValue()
			case "sudoku_batch_lines_total":
				lines[labels["outcome"]] = m.GetCounter().GetValue()
			}
		}
	}
	for k, n := range st.Totals {
		label := k
		if k == "stats" || k == "batch" {
			label = "ok"
		}
		if k != "stats" && k != "batch" && float64(n) != byOutcome[label] {
			t.Errorf("stats totals[%s] = %d, /metrics requests_total{outcome=%q} = %v", k, n, label, byOutcome[label])
		}
	}
	// The stats request itself is counted once answered, after its body
	// was built and before the scrape.
	if ok := float64(st.Totals["stats"] + st.Totals["batch"] + 1); ok != byOutcome["ok"] {
		t.Errorf("stats+batch totals = %v, /metrics ok = %v", ok, byOutcome["ok"])
	}
	if st.Totals["solved"] != 1 || st.Totals["no_solution"] != 1 || st.Totals["not_found"] != 1 || st.Totals["batch"] != 1 {
		t.Errorf("totals = %v, want 1 solved, 1 no_solution, 1 not_found, 1 batch", st.Totals)
	}
	want := map[string]uint64{"solved": 1, "bad_request": 1, "no_solution": 1, "too_busy": 0, "timeout": 0, "internal_error": 0}
	if len(st.BatchLines) != len(want) {
		t.Errorf("batch_lines = %v, want exactly the keys of %v", st.BatchLines, want)
	}
	for k, n := range want {
		if got, ok := st.BatchLines[k]; !ok || got != n {
			t.Errorf("batch_lines[%s] = %d (present %v), want %d", k, got, ok, n)
		}
		if lines[k] != float64(n) {
			t.Errorf("/metrics batch_lines_total{outcome=%q} = %v, want %d", k, lines[k], n)
		}
	}
	if len(lines) != len(want) {
		t.Errorf("/metrics batch_lines_total outcomes = %v, want those of %v", lines, want)
	}
}
