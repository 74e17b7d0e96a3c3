package conf

import (
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sudoku-fcgi/nginx/discover"
)

// aps parses worker addresses: ip:port, or unix:<path>.
func aps(ss ...string) []discover.Addr {
	out := make([]discover.Addr, len(ss))
	for i, s := range ss {
		a, err := discover.ParseAddr(s)
		if err != nil {
			panic(err)
		}
		out[i] = a
	}
	return out
}

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// TestUpstreamFilesServers: servers.conf
// against the golden files, each server at its own max_conns (a budget of
// as many workers as there are).
func TestUpstreamFilesServers(t *testing.T) {
	ap := func(s string) discover.Addr { return aps(s)[0] }
	tests := []struct {
		name  string
		addrs []discover.Addr
		u     Upstream
	}{
		{"servers_none.conf", nil, Upstream{}},
		{"servers_two.conf", []discover.Addr{ap("172.18.0.3:9000"), ap("172.18.0.4:9000")}, Upstream{}},
		{"servers_params.conf", []discover.Addr{ap("10.0.0.1:9000"), ap("[fd00::1]:9000")}, Upstream{MaxConns: 10, MaxFails: 3, FailTimeout: 2 * time.Second}},
		{"servers_tcp.conf", []discover.Addr{ap("10.0.0.1:9000")}, DefaultUpstream},
		{"servers_unix.conf", aps("unix:/run/sudoku-fcgi/3f2a.sock", "unix:/run/sudoku-fcgi/9c1b.sock"), DefaultUpstream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := render(t, "sudoku:9000", 0, tt.u, tt.addrs, len(tt.addrs))
			golden(t, tt.name, got)
		})
	}
}

func TestNewUpstreamFilesRejects(t *testing.T) {
	for _, u := range []Upstream{{MaxConns: -1}, {MaxFails: -1}, {MaxFails: 1}, {MaxFails: 1, FailTimeout: 1500 * time.Millisecond}} {
		if _, err := NewUpstreamFiles("s", 512, u); !errors.Is(err, ErrUnsafe) {
			t.Errorf("NewUpstreamFiles(%+v) error = %v, want ErrUnsafe", u, err)
		}
	}
	if _, err := NewUpstreamFiles("a\nb", 512, DefaultUpstream); !errors.Is(err, ErrUnsafe) {
		t.Errorf("NewUpstreamFiles(source with a line break) error = %v, want ErrUnsafe", err)
	}
}

// render renders the upstream files for addrs and budget with the
// settings given, failing t on an error.
func render(t *testing.T, source string, pool int, u Upstream, addrs []discover.Addr, budget int) (servers, admission []byte) {
	t.Helper()
	f, err := NewUpstreamFiles(source, pool, u)
	if err != nil {
		t.Fatal(err)
	}
	servers, admission, err = f.Render(addrs, budget)
	if err != nil {
		t.Fatalf("Render(%v, %d) with %+v: %v", addrs, budget, u, err)
	}
	return servers, admission
}

func TestRenderTLS(t *testing.T) {
	base := TLSServer{
		Sites: []TLSSite{
			{"sudoku.example.com", "/run/sudoku-edge/certs/live/sudoku.example.com.crt", "/run/sudoku-edge/certs/live/sudoku.example.com.key"},
			{"www.sudoku.example.com", "/run/sudoku-edge/certs/live/www.sudoku.example.com.crt", "/run/sudoku-edge/certs/live/www.sudoku.example.com.key"},
		},
		CA:            "https://acme-v02.api.letsencrypt.org/directory",
		HTTPSListen:   "8443",
		Locations:     "/etc/nginx/sudoku-locations.conf",
		HSTSMaxAge:    63072000,
		HTTPListen:    "8080",
		ChallengeAddr: "127.0.0.1:8081",
		RedirectPort:  443,
	}
	full := base
	full.HSTS, full.Redirect = true, true
	port := full
	port.RedirectPort = 48443
	tests := []struct {
		name string
		in   TLSServer
	}{
		{"tls_off.conf", TLSServer{}},
		{"tls_plain.conf", base},
		{"tls_redirect_hsts.conf", full},
		{"tls_redirect_port.conf", port},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderTLS(tt.in)
			if err != nil {
				t.Fatalf("RenderTLS(%+v) error: %v", tt.in, err)
			}
			golden(t, tt.name, got)
		})
	}
}

func TestRenderTLSRejectsUnsafe(t *testing.T) {
	tests := map[string]TLSServer{
		"domain with space":  {Sites: []TLSSite{{Name: "a.example.com b"}}},
		"domain with brace":  {Sites: []TLSSite{{Name: "a.example.com}"}}},
		"cert path with ;":   {Sites: []TLSSite{{Name: "a.example.com", CertFile: "/x;y"}}},
		"locations with \\n": {Sites: []TLSSite{{Name: "a.example.com"}}, Locations: "/x\ninclude /etc/passwd"},
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := RenderTLS(in); !errors.Is(err, ErrUnsafe) {
				t.Errorf("RenderTLS(%+v) error = %v, want ErrUnsafe", in, err)
			}
		})
	}
}

// TestCheckDomain: the names the command accepts for -tls-domains (the
// one check; RenderTLS only refuses what would break the configuration).
func TestCheckDomain(t *testing.T) {
	for _, d := range []string{"a.example.com", "sudoku.test", "x-1.example.org"} {
		if err := CheckDomain(d); err != nil {
			t.Errorf("CheckDomain(%q) = %v, want nil", d, err)
		}
	}
	for _, d := range []string{"", "*.example.com", "a..example.com", "-a.example.com", "a.example.com b", "a_b.example.com"} {
		if err := CheckDomain(d); !errors.Is(err, ErrUnsafe) {
			t.Errorf("CheckDomain(%q) = %v, want ErrUnsafe", d, err)
		}
	}
}

func TestRenderRealIP(t *testing.T) {
	for name, list := range map[string][]string{"realip_none.conf": nil, "realip_some.conf": {"10.0.0.0/8", "172.18.0.1", "fd00::/8"}} {
		t.Run(name, func(t *testing.T) {
			ps, err := ParsePrefixes(list)
			if err != nil {
				t.Fatalf("ParsePrefixes(%q) error: %v", list, err)
			}
			got, err := renderRealIP(ps, false)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name, got)
		})
	}
}

func TestRenderTrustedClients(t *testing.T) {
	tests := []struct {
		name string
		list []string
	}{
		{"trusted_none.conf", nil},
		{"trusted_some.conf", []string{"172.18.0.1", "10.1.2.3/8", "fd00::/8", "2001:db8::7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := ParsePrefixes(tt.list)
			if err != nil {
				t.Fatalf("ParsePrefixes(%q) error: %v", tt.list, err)
			}
			got, err := renderTrustedClients(ps)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, got)
		})
	}
}

func TestParseTrustedClientsRejects(t *testing.T) {
	for _, item := range []string{"10.0.0.0/33", "example.com", "10.0.0.1 1; 0.0.0.0/0", "1.2.3.4/8;", "*"} {
		if ps, err := ParsePrefixes([]string{item}); err == nil {
			t.Errorf("ParsePrefixes(%q) = %v, want an error", item, ps)
		}
	}
}

// TestUpstreamFilesAdmission: the
// limit_conn line is workers x max_conns, each worker at its own max_conns
// (a budget of as many workers as there are).
func TestUpstreamFilesAdmission(t *testing.T) {
	tests := []struct {
		workers, maxConns int
		want              string // the limit_conn line, or "" for none
	}{
		{2, 256, "limit_conn sudoku_admission 512;"},
		{4, 100, "limit_conn sudoku_admission 400;"},
		{0, 256, ""},
		{2, 0, ""},
	}
	for _, tt := range tests {
		var addrs []discover.Addr
		for i := range tt.workers {
			addrs = append(addrs, discover.TCPAddr(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), 9000)))
		}
		_, got := render(t, "sudoku:9000", 0, Upstream{MaxConns: tt.maxConns}, addrs, tt.workers)
		var line string
		for _, l := range strings.Split(string(got), "\n") {
			if strings.HasPrefix(l, "limit_conn") {
				line = l
			}
		}
		if line != tt.want {
			t.Errorf("Render(%d workers, max_conns %d) limit line = %q, want %q; file:\n%s", tt.workers, tt.maxConns, line, tt.want, got)
		}
	}
}

func TestShareMaxConns(t *testing.T) {
	tests := []struct {
		maxConns, workers, budget, pool int
		want                            int
	}{
		{256, 1, 2, 512, 512},
		{256, 2, 3, 0, 384},
		{256, 2, 3, 512, 256}, // the pool of 512 bounds two workers to 256 each
		{256, 1, 3, 512, 512},
		{256, 2, 3, 1024, 384},
		{100, 3, 4, 0, 134}, // rounded up
		{100, 3, 4, 1000, 134},
		{256, 2, 2, 512, 256},
		{256, 0, 2, 512, 256},
		{0, 1, 2, 512, 0},
	}
	for _, tt := range tests {
		if got := shareMaxConns(tt.maxConns, tt.workers, tt.budget, tt.pool); got != tt.want {
			t.Errorf("shareMaxConns(%d, %d, %d, %d) = %d; want %d", tt.maxConns, tt.workers, tt.budget, tt.pool, got, tt.want)
		}
	}
}

// UpstreamFiles.Render: the worker left of a budget of two takes both shares,
// and the admission limit stays; two left of three stay within the pool of
// idle connections; with no worker there is no limit.
func TestUpstreamFilesRender(t *testing.T) {
	one := aps("10.0.0.2:9000")
	servers, admission := render(t, "sudoku:9000", 512, DefaultUpstream, one, 2)
	if !strings.Contains(string(servers), "server 10.0.0.2:9000 max_fails=1 fail_timeout=1s max_conns=512;") {
		t.Errorf("servers.conf for one of two workers:\n%s", servers)
	}
	if !strings.Contains(string(admission), "limit_conn sudoku_admission 512;") {
		t.Errorf("admission.conf for a budget of two:\n%s", admission)
	}
	two := aps("10.0.0.2:9000", "10.0.0.3:9000")
	servers, admission = render(t, "sudoku:9000", 512, DefaultUpstream, two, 3)
	if !strings.Contains(string(servers), "server 10.0.0.3:9000 max_fails=1 fail_timeout=1s max_conns=256;") ||
		!strings.Contains(string(admission), "limit_conn sudoku_admission 512;") {
		t.Errorf("two of three workers with a pool of 512 take 256 each, 512 in all:\n%s\n%s", servers, admission)
	}
	_, admission = render(t, "sudoku:9000", 512, DefaultUpstream, nil, 2)
	if strings.Contains(string(admission), "limit_conn ") {
		t.Errorf("admission.conf with no worker has a limit:\n%s", admission)
	}
}

// Each nginx worker process gets its share of the totals, so that nginx
// as a whole keeps as many connections whatever -worker-processes is; the
// compose stack's 2 processes get what nginx.conf fixed before.
func TestProcessLimitsFollowTheProcesses(t *testing.T) {
	for _, tc := range []struct {
		processes              int
		connections, keepalive string
	}{
		{2, "worker_connections 4096;", "keepalive 256;"},
		{1, "worker_connections 8192;", "keepalive 512;"},
		{3, "worker_connections 2731;", "keepalive 171;"},
		{0, "worker_connections 8192;", "keepalive 512;"}, // nginx.conf's own count: the totals each
		{1024, "worker_connections 8;", "keepalive 1;"},
	} {
		events, keepalive, err := renderProcessLimits(DefaultProcessLimits, tc.processes)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(events), "\n"+tc.connections+"\n") || !strings.Contains(string(keepalive), "\n"+tc.keepalive+"\n") {
			t.Errorf("%d processes: events.conf\n%s\nkeepalive.conf\n%s\nwant %q and %q", tc.processes, events, keepalive, tc.connections, tc.keepalive)
		}
	}
	if _, _, err := renderProcessLimits(ProcessLimits{Connections: 8192}, 2); err == nil {
		t.Error("keepalive 0: nil error")
	}
}
