package nginx

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"sudoku-fcgi/nginx/discover"
	"sudoku-fcgi/nginx/nginxtest"
)

// targets parses each of list as a worker target.
func targets(t *testing.T, list ...string) []discover.Target {
	t.Helper()
	out, err := discover.ParseTargets(list)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// backend starts an HTTP server that answers id and returns its address.
func backend(t *testing.T, id string) discover.Addr {
	t.Helper()
	return discover.TCPAddr(nginxtest.Backend(t, id))
}

// metricValue is the value of sudoku_edge_<name> with the label pairs
// labels among m's metrics, as a scrape reads it; 0 when there is none.
func metricValue(t *testing.T, m *Metrics, name string, labels ...string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(m); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "sudoku_edge_"+name {
			continue
		}
	metrics:
		for _, mt := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range mt.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if got[labels[i]] != labels[i+1] {
					continue metrics
				}
			}
			switch {
			case mt.Counter != nil:
				return mt.GetCounter().GetValue()
			case mt.Gauge != nil:
				return mt.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// fakeNginx stands in for nginx: it passes every check and counts the
// checks and reloads.
type fakeNginx struct{ checks, reloads int }

func (f *fakeNginx) Check(context.Context) error { f.checks++; return nil }
func (f *fakeNginx) Reload() error               { f.reloads++; return nil }

// testNginx is nginxtest.ProxyConf with 2 worker processes.
func testNginx(t *testing.T, dir, runDir string, port int, http, server string) string {
	t.Helper()
	return nginxtest.ProxyConf(t, 2, dir, runDir, port, http, server)
}

// testNginxWorkers is nginxtest.ProxyConf.
func testNginxWorkers(t *testing.T, workers int, dir, runDir string, port int, http, server string) string {
	t.Helper()
	return nginxtest.ProxyConf(t, workers, dir, runDir, port, http, server)
}
