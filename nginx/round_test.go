package nginx

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"sudoku-fcgi/nginx/discover"
	"sudoku-fcgi/nginx/proc"
)

// fakeResolver answers from a map that tests change between calls.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]string
	err     error
	calls   int
}

func (f *fakeResolver) LookupHost(ctx context.Context, host string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	a, ok := f.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return a, nil
}

func (f *fakeResolver) set(host string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if addrs == nil {
		delete(f.answers, host)
		return
	}
	f.answers[host] = addrs
}

// aps parses worker addresses: ip:port, or unix:<path>.
func aps(ss ...string) []discover.Addr {
	var out []discover.Addr
	for _, s := range ss {
		if path, ok := strings.CutPrefix(s, "unix:"); ok {
			out = append(out, discover.UnixAddr(path))
		} else {
			out = append(out, discover.TCPAddr(netip.MustParseAddrPort(s)))
		}
	}
	return out
}

// TestRoundFollowsTheWorkers (formerly Discovery.Watch's test, now the one
// loop, Supervisor.round): a fake service scales 2 -> 3 -> 2 with a DNS
// failure in between; each new set reaches servers.conf with one reload,
// and the failure keeps the set and reloads nothing.
func TestRoundFollowsTheWorkers(t *testing.T) {
	r := &fakeResolver{answers: map[string][]string{"sudoku": {"10.0.0.1", "10.0.0.2"}}}
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
	step := func(what string, want []discover.Addr, reloads int) {
		t.Helper()
		s.round(ctx)
		if !slices.Equal(s.addrs, want) || fake.reloads != reloads {
			t.Errorf("%s: upstream %v after %d reloads, want %v after %d", what, s.addrs, fake.reloads, want, reloads)
		}
		servers, _ := os.ReadFile(filepath.Join(s.cfg.RunDir, "servers.conf"))
		for _, a := range want {
			if !strings.Contains(string(servers), "server "+a.String()+" max_fails=0;") {
				t.Errorf("%s: servers.conf lacks %s:\n%s", what, a, servers)
			}
		}
	}
	step("no change", aps("10.0.0.1:9000", "10.0.0.2:9000"), 0)
	r.set("sudoku", "10.0.0.1", "10.0.0.2", "10.0.0.3")
	step("scale up", aps("10.0.0.1:9000", "10.0.0.2:9000", "10.0.0.3:9000"), 1)
	r.mu.Lock()
	r.err = &net.DNSError{Err: "server misbehaving", Name: "sudoku", IsTemporary: true}
	r.mu.Unlock()
	step("DNS failure", aps("10.0.0.1:9000", "10.0.0.2:9000", "10.0.0.3:9000"), 1)
	if got := testutil.ToFloat64(s.Metrics.lookupErrors); got != 1 {
		t.Errorf("sudoku_edge_discovery_errors_total = %v after one failure, want 1", got)
	}
	r.mu.Lock()
	r.err = nil
	r.mu.Unlock()
	r.set("sudoku", "10.0.0.3", "10.0.0.1")
	step("scale down", aps("10.0.0.1:9000", "10.0.0.3:9000"), 2)
}
