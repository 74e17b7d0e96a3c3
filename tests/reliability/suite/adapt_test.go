package suite

import (
	"strings"
	"testing"
	"time"

	"sudoku-fcgi/cmd/sudoku-load/load"
)

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

// A joining worker counts from its first answer to a request due after
// it started, never from an earlier one or a 503.
func TestFirstAnswerBy(t *testing.T) {
	recs := []record{
		{At: 1 * time.Second, Kind: kindOK, Worker: "w3"},
		{At: 3 * time.Second, Kind: kindBusy, Worker: "w3"},
		{At: 4 * time.Second, Kind: kindOK, Worker: "w1"},
		{At: 5 * time.Second, Kind: kindOK, Worker: "w3"},
	}
	if d, ok := firstAnswerBy(recs, "w3", 2*time.Second); !ok || d != 3*time.Second {
		t.Errorf("firstAnswerBy(w3, 2s) = %v, %v; want 3s, true", d, ok)
	}
	if d, ok := firstAnswerBy(recs, "w4", 0); ok || d >= 0 {
		t.Errorf("firstAnswerBy(w4) = %v, %v; want never", d, ok)
	}
}

// A 503 counts as busy only with Retry-After; without it, it is a failure.
func TestLabelBusyNeedsRetryAfter(t *testing.T) {
	if got := label(load.Outcome{Kind: load.KindBusy, Status: 503, RetryAfter: "2"}); got != kindBusy {
		t.Errorf("503 with Retry-After = %q, want %q", got, kindBusy)
	}
	if got := label(load.Outcome{Kind: load.KindBusy, Status: 503}); got != kindBusyBare {
		t.Errorf("503 without Retry-After = %q, want %q", got, kindBusyBare)
	}
}

// The workers' metrics are read by name and label, whatever the labels'
// order, summed over the label sets that match.
func TestParseMetrics(t *testing.T) {
	m, err := parseMetrics(strings.NewReader(`# TYPE sudoku_requests_total counter
sudoku_requests_total{route="get",outcome="too_busy"} 4
sudoku_requests_total{outcome="too_busy",route="batch"} 100
sudoku_requests_total{outcome="solved",route="get"} 1000
# TYPE sudoku_fastcgi_requests gauge
sudoku_fastcgi_requests 3
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.value("sudoku_requests_total", "outcome", "too_busy", "route", "get"); got != 4 {
		t.Errorf("busy GETs = %v, want 4", got)
	}
	if got := m.value("sudoku_requests_total", "outcome", "too_busy"); got != 104 {
		t.Errorf("busy answers = %v, want 104", got)
	}
	if !m.has("sudoku_fastcgi_requests") || m.value("sudoku_fastcgi_requests") != 3 || m.has("sudoku_missing") {
		t.Errorf("gauge: has %v value %v; missing has %v", m.has("sudoku_fastcgi_requests"), m.value("sudoku_fastcgi_requests"), m.has("sudoku_missing"))
	}
	if _, err := parseMetrics(strings.NewReader("garbage{")); err == nil {
		t.Error("parseMetrics(garbage) = nil error")
	}
}

func TestFailedWhenNamesTheErrors(t *testing.T) {
	wait := `Get "http://172.18.0.4:8080/sudoku?puzzle=1...&id=7": net/http: request canceled while waiting for connection (Client.Timeout exceeded while awaiting headers)`
	reset := `Get "http://172.18.0.4:8080/sudoku?puzzle=2...&id=8": read tcp 172.18.0.1:40312->172.18.0.4:8080: read: connection reset by peer`
	recs := []record{
		{At: time.Second, Kind: kindOK},
		{At: 2 * time.Second, Kind: kindBusy},
		{At: 3 * time.Second, Latency: 30 * time.Second, Kind: kindTimeout, Err: wait},
		{At: 3 * time.Second, Latency: 30 * time.Second, Kind: kindTimeout, Err: strings.Replace(wait, "id=7", "id=9", 1)},
		{At: 4 * time.Second, Latency: time.Millisecond, Kind: kindReset, Err: reset},
	}
	got := failedWhen(recs)
	for _, want := range []string{"due from 3s to 4s", "after 30s", `2 x "Get \"http://172.18.0.4:8080/sudoku?...\": net/http: request canceled while waiting for connection`, `1 x "Get \"http://172.18.0.4:8080/sudoku?...\": read tcp 172.18.0.1:*->172.18.0.4:8080`} {
		if !strings.Contains(got, want) {
			t.Errorf("failedWhen = %s\nwant it to contain %s", got, want)
		}
	}
	if failedWhen(recs[:2]) != "" {
		t.Errorf("failedWhen of answers and 503s = %q, want nothing", failedWhen(recs[:2]))
	}
}
