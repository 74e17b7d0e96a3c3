package nginx

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"sudoku-fcgi/nginx/discover"
	"sudoku-fcgi/nginx/nginxtest"
	"sudoku-fcgi/nginx/proc"
)

// TestRoundFollowsTheWorkers: through Supervisor.round, a fake service
// scales 2 -> 3 -> 2 with a DNS failure in between; each new set reaches
// servers.conf with one reload, and the failure keeps the set and reloads
// nothing.
func TestRoundFollowsTheWorkers(t *testing.T) {
	r := nginxtest.NewResolver(map[string][]string{"sudoku": {"10.0.0.1", "10.0.0.2"}}, nil)
	fake := &fakeNginx{}
	s := &Supervisor{Config: Config{RunDir: t.TempDir(), Workers: targets(t, "sudoku:9000"), BudgetHold: time.Minute}, Metrics: NewMetrics()}
	var err error
	if s.cfg, err = s.Config.resolve(); err != nil {
		t.Fatal(err)
	}
	s.disc = &discover.Discovery{Targets: s.cfg.Workers, Resolver: r}
	s.applier = &proc.Applier{Checker: fake, Reloader: fake, Log: zerolog.Nop()}
	ctx := context.Background()
	if err := s.writeStartFiles(ctx); err != nil {
		t.Fatal(err)
	}
	step := func(what string, want []string, reloads int) {
		t.Helper()
		s.round(ctx)
		if got := discover.Strings(s.addrs); !slices.Equal(got, want) || fake.reloads != reloads {
			t.Errorf("%s: upstream %v after %d reloads, want %v after %d", what, s.addrs, fake.reloads, want, reloads)
		}
		servers, _ := os.ReadFile(filepath.Join(s.cfg.RunDir, "servers.conf"))
		for _, a := range want {
			if !strings.Contains(string(servers), "server "+a+" max_fails=0;") {
				t.Errorf("%s: servers.conf lacks %s:\n%s", what, a, servers)
			}
		}
	}
	step("no change", []string{"10.0.0.1:9000", "10.0.0.2:9000"}, 0)
	r.Set("sudoku", "10.0.0.1", "10.0.0.2", "10.0.0.3")
	step("scale up", []string{"10.0.0.1:9000", "10.0.0.2:9000", "10.0.0.3:9000"}, 1)
	r.SetErr(&net.DNSError{Err: "server misbehaving", Name: "sudoku", IsTemporary: true})
	step("DNS failure", []string{"10.0.0.1:9000", "10.0.0.2:9000", "10.0.0.3:9000"}, 1)
	if got := testutil.ToFloat64(s.Metrics.lookupErrors); got != 1 {
		t.Errorf("sudoku_edge_discovery_errors_total = %v after one failure, want 1", got)
	}
	r.SetErr(nil)
	r.Set("sudoku", "10.0.0.3", "10.0.0.1")
	step("scale down", []string{"10.0.0.1:9000", "10.0.0.3:9000"}, 2)
}
