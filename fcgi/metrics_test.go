package fcgi

import (
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
	s := newTestService(t, Config{})
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
