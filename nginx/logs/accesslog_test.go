package logs

import (
	"math"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

func TestAccessLogCountsOverTheSocket(t *testing.T) {
	m := NewMetrics()
	a := &AccessLog{Path: filepath.Join(t.TempDir(), "log.sock")}
	if err := a.Listen(m); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve() }()
	conn, err := net.Dial("unixgram", a.Path)
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{
		// In the sample: each counts SampleEvery (16).
		"<190>Dec  1 19:00:00 nginx: 200 1 0.040 200",
		"<190>Dec  1 19:00:00 nginx: 200 1 0.020 503, 200",
		"<190>Dec  1 19:00:00 nginx: 503 1 0.004 -",
		"<190>Dec  1 19:00:00 nginx: 429 1 0.004 -",
		// Out of the sample, for a status counted by the sample only: not counted.
		"<190>Dec  1 19:00:00 nginx: 503 0 0.004 -",
		// Sent for its status alone: counts once.
		"<190>Dec  1 19:00:00 nginx: 404 0 0.004 -",
		// nginx's 502 "no live upstreams", answered as 503; a worker's own busy 503 after a retry;
		// an error page after an internal redirect.
		"<190>Dec  1 19:00:00 nginx: 503 1 0.004 502",
		"<190>Dec  1 19:00:00 nginx: 503 1 0.004 503, 503",
		"<190>Dec  1 19:00:00 nginx: 503 1 0.004 503 : -",
		"<190>Dec  1 19:00:00 nginx: nonsense",
		"<190>Dec  1 19:00:00 nginx: 200 1 soon 200",
		"<190>Dec  1 19:00:00 nginx: 999 1 0.004 -",
	}
	for _, l := range lines {
		if _, err := conn.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(m.accessLogErrors) < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	a.Close()
	if err := <-done; err != nil {
		t.Fatalf("Serve() = %v", err)
	}
	if _, err := os.Stat(a.Path); !os.IsNotExist(err) {
		t.Errorf("socket left behind after close: %v", err)
	}
	for _, tc := range []struct {
		code, source string
		want         float64
	}{{"200", "worker", 32}, {"503", "nginx", 48}, {"503", "worker", 16}, {"429", "nginx", 16}, {"404", "nginx", 1}} {
		if got := testutil.ToFloat64(m.responses.WithLabelValues(tc.code, tc.source)); got != tc.want {
			t.Errorf("responses{code=%s,source=%s} = %v, want %v", tc.code, tc.source, got, tc.want)
		}
	}
	if got := testutil.ToFloat64(m.accessLogErrors); got != 3 {
		t.Errorf("access log errors = %v, want 3", got)
	}
	// Request times: the sampled lines alone, by source.
	for _, tc := range []struct {
		source     string
		count, sum float64
	}{{"worker", 3, 0.064}, {"nginx", 4, 0.016}} {
		var h dto.Metric
		if err := m.requestSeconds.WithLabelValues(tc.source).(prometheus.Histogram).Write(&h); err != nil {
			t.Fatal(err)
		}
		if c, sum := float64(h.GetHistogram().GetSampleCount()), h.GetHistogram().GetSampleSum(); c != tc.count || math.Abs(sum-tc.sum) > 1e-9 {
			t.Errorf("request time{source=%s}: count %v, sum %v; want %v, %v", tc.source, c, sum, tc.count, tc.sum)
		}
	}
}

// TestAccessLogAllCountsEachLineOnce: with All every line is one answer.
func TestAccessLogAllCountsEachLineOnce(t *testing.T) {
	m := NewMetrics()
	a := &AccessLog{All: true, metrics: m}
	a.line([]byte("<190>Dec  1 19:00:00 nginx: 503 1 0.004 -"))
	a.line([]byte("<190>Dec  1 19:00:00 nginx: 200 1 0.004 200"))
	if got := testutil.ToFloat64(m.responses.WithLabelValues("503", "nginx")); got != 1 {
		t.Errorf("503 from nginx = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.responses.WithLabelValues("200", "worker")); got != 1 {
		t.Errorf("200 from a worker = %v, want 1", got)
	}
}
