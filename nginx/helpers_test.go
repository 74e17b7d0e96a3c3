package nginx

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

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

// testNginx writes a minimal host nginx.conf whose upstream includes
// runDir/servers.conf and whose server on port proxies every request to it;
// http and server are further directives for the http and server blocks.
func testNginx(t *testing.T, dir, runDir string, port int, http, server string) string {
	t.Helper()
	return testNginxWorkers(t, 2, dir, runDir, port, http, server)
}

// testNginxWorkers is testNginx with workers worker processes; 0 leaves
// them to the supervisor.
func testNginxWorkers(t *testing.T, workers int, dir, runDir string, port int, http, server string) string {
	t.Helper()
	return nginxtest.WriteConf(t, dir, workers, 256, fmt.Sprintf(`
    upstream backends {
        zone backends 64k;
        random two least_conn;
        include %[1]s/servers.conf;
        keepalive 8;
    }%[3]s
    server {
        listen 127.0.0.1:%[2]d;%[4]s
        location / {
            proxy_pass http://backends;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
`, runDir, port, http, server))
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// waitFor polls url until the body is want (a reload takes effect when new
// workers start).
func waitFor(t *testing.T, url, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = string(b)
			if resp.StatusCode == 200 && last == want {
				return
			}
		} else {
			last = err.Error()
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("GET %s: still %q after 5s, want %q", url, last, want)
}
