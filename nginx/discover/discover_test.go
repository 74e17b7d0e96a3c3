package discover

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sudoku-fcgi/nginx/nginxtest"
)

// aps parses worker addresses: ip:port, or unix:<path>.
func aps(ss ...string) []Addr {
	out := make([]Addr, len(ss))
	for i, s := range ss {
		a, err := ParseAddr(s)
		if err != nil {
			panic(err)
		}
		out[i] = a
	}
	return out
}

func TestResolve(t *testing.T) {
	timeout := &net.DNSError{Err: "i/o timeout", Name: "sudoku", IsTimeout: true, IsTemporary: true}
	tests := []struct {
		name    string
		targets []string
		answers map[string][]string
		err     error
		want    []Addr
		wantErr bool
	}{
		{name: "two replicas, sorted",
			targets: []string{"sudoku:9000"},
			answers: map[string][]string{"sudoku": {"172.18.0.5", "172.18.0.3"}},
			want:    aps("172.18.0.3:9000", "172.18.0.5:9000")},
		{name: "duplicates collapse",
			targets: []string{"sudoku:9000", "sudoku:9000"},
			answers: map[string][]string{"sudoku": {"172.18.0.3", "172.18.0.3"}},
			want:    aps("172.18.0.3:9000")},
		{name: "IP literals need no lookup",
			targets: []string{"127.0.0.1:19001", "127.0.0.1:19000"},
			want:    aps("127.0.0.1:19000", "127.0.0.1:19001")},
		{name: "IPv4-mapped addresses print as IPv4",
			targets: []string{"sudoku:9000"},
			answers: map[string][]string{"sudoku": {"::ffff:10.0.0.7"}},
			want:    aps("10.0.0.7:9000")},
		{name: "name gone (scaled to zero): empty set, no error",
			targets: []string{"sudoku:9000"},
			answers: map[string][]string{}},
		{name: "temporary DNS failure: error, so the caller keeps its set",
			targets: []string{"sudoku:9000"}, err: timeout, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := nginxtest.NewResolver(tt.answers, tt.err)
			d := &Discovery{Targets: targets(t, tt.targets...), Resolver: r}
			got, err := d.Resolve(context.Background())
			if (err != nil) != tt.wantErr {
				t.Fatalf("Resolve(%v) error = %v, wantErr %v", tt.targets, err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Resolve(%v) = %v, want %v", tt.targets, got, tt.want)
			}
		})
	}
}

func TestParseTargets(t *testing.T) {
	for _, in := range [][]string{
		{"sudoku:9000"},
		{"127.0.0.1:1", "127.0.0.1:2"},
		{"[::1]:9000"},
		{"unix:/run/sudoku-fcgi/*.sock", "sudoku:9000"},
		{"unix:/run/w.sock"},
	} {
		parsed, err := ParseTargets(in)
		var got []string
		for _, p := range parsed {
			got = append(got, p.String())
		}
		if err != nil || !slices.Equal(got, in) {
			t.Errorf("ParseTargets(%q) = %q, %v; want %q", in, got, err, in)
		}
	}
	for _, in := range [][]string{nil, {}, {"sudoku"}, {":9000"}, {"sudoku:0"}, {"sudoku:70000"}, {"sudoku:x"},
		{"unix:"}, {"unix:run/*.sock"}, {"unix:/run/["}, {"unix:/run/a b/*.sock"}, {"unix:/run/*.sock;"}, {"sudoku:9000", "sudoku"}} {
		if got, err := ParseTargets(in); err == nil {
			t.Errorf("ParseTargets(%q) = %q, want an error", in, got)
		}
	}
}

// TestNextDiff: Next returns what was added and removed
// against the previous set.
func TestNextDiff(t *testing.T) {
	d := &Discovery{Targets: targets(t, "10.0.0.2:1", "10.0.0.3:1")}
	w, err := d.Next(context.Background(), aps("10.0.0.1:1", "10.0.0.2:1"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.Added, aps("10.0.0.3:1")) || !slices.Equal(w.Removed, aps("10.0.0.1:1")) {
		t.Errorf("Next = +%v -%v, want +[10.0.0.3:1] -[10.0.0.1:1]", w.Added, w.Removed)
	}
}

func TestResolveHonoursTimeout(t *testing.T) {
	d := &Discovery{Targets: targets(t, "sudoku:9000"), Resolver: blockingResolver{}, Timeout: 20 * time.Millisecond}
	_, err := d.Resolve(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Resolve with a hanging Resolver: error = %v, want DeadlineExceeded", err)
	}
}

type blockingResolver struct{}

func (blockingResolver) LookupHost(ctx context.Context, host string) ([]string, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// With DropRefusing, an address whose port refuses connections (a draining
// worker's closed listener) is left out; one that accepts stays.
func TestResolveDropsRefusing(t *testing.T) {
	open, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	openAddr := open.Addr().String()

	for _, drop := range []bool{false, true} {
		d := &Discovery{Targets: targets(t, openAddr, closedAddr), DropRefusing: drop}
		got, err := d.Resolve(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := []string{openAddr, closedAddr}
		if drop {
			want = []string{openAddr}
		}
		slices.Sort(want)
		if gotS := Strings(got); !slices.Equal(gotS, want) {
			t.Errorf("DropRefusing=%v: got %v, want %v", drop, gotS, want)
		}
	}
}

// An address dropped for refusing stays out while its connects time out
// (a stopped container's name may still resolve), and comes back once it
// accepts. An address that times out while another accepts (its host died
// or is cut off) is dropped until it accepts; when every connect times out
// (this process stalled) the others are kept.
func TestResolveRefusedStaysOutUntilAccepted(t *testing.T) {
	const w1, w2, w3 = "192.0.2.1:9000", "192.0.2.2:9000", "192.0.2.3:9000"
	slow := context.DeadlineExceeded
	steps := []struct {
		probe map[string]error
		want  []string
	}{
		{map[string]error{w1: syscall.ECONNREFUSED, w2: nil, w3: nil}, []string{w2, w3}},
		{map[string]error{w1: slow, w2: slow, w3: slow}, []string{w2, w3}},
		{map[string]error{w1: nil, w2: nil, w3: nil}, []string{w1, w2, w3}},
		{map[string]error{w1: slow, w2: nil, w3: nil}, []string{w2, w3}},
		{map[string]error{w1: slow, w2: slow, w3: nil}, []string{w3}},
		{map[string]error{w1: slow, w2: slow, w3: slow}, []string{w3}},
		{map[string]error{w1: nil, w2: slow, w3: nil}, []string{w1, w3}},
		{map[string]error{w1: nil, w2: nil, w3: nil}, []string{w1, w2, w3}},
	}
	d := &Discovery{Targets: targets(t, w1, w2, w3), DropRefusing: true}
	for i, st := range steps {
		d.probe = func(_ context.Context, a Addr) error { return st.probe[a.String()] }
		got, err := d.Resolve(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if gotS := Strings(got); !slices.Equal(gotS, st.want) {
			t.Errorf("step %d: got %v, want %v", i, gotS, st.want)
		}
	}
}

// A socket file whose connect fails otherwise than by refusing (a full
// backlog: EAGAIN) is kept while the other accepts: it is a busy worker,
// not a vanished host.
func TestResolveKeepsBusySocket(t *testing.T) {
	dir := t.TempDir()
	listenUnix(t, dir+"/a.sock", false)
	listenUnix(t, dir+"/b.sock", false)
	d := &Discovery{Targets: targets(t, "unix:"+dir+"/*.sock"), DropRefusing: true}
	d.probe = func(_ context.Context, a Addr) error {
		if strings.HasSuffix(a.path, "/a.sock") {
			return syscall.EAGAIN
		}
		return nil
	}
	got, err := d.Resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Errorf("got %v, want both sockets", Strings(got))
	}
}

// listenUnix serves nothing on a unix socket at path; with stale, it closes
// the listener at once and leaves the file behind, as a SIGKILLed worker
// does: connects to it are refused.
func listenUnix(t *testing.T, path string, stale bool) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	if stale {
		ln.SetUnlinkOnClose(false)
		ln.Close()
		return
	}
	t.Cleanup(func() { ln.Close() })
}

// A unix:<glob> target lists the sockets it matches, sorted after the TCP
// addresses; other files, sockets whose name no worker makes
// (contract.SocketName) and a missing directory contribute nothing.
func TestResolveUnixGlob(t *testing.T) {
	dir := t.TempDir()
	listenUnix(t, dir+"/b.sock", false)
	listenUnix(t, dir+"/a.sock", false)
	listenUnix(t, dir+"/other", false)
	listenUnix(t, dir+"/a+b.sock", false)
	listenUnix(t, dir+"/.hidden.sock", false)
	if err := os.WriteFile(dir+"/file.sock", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir+"/dir.sock", 0o755); err != nil {
		t.Fatal(err)
	}
	list := []string{"unix:" + dir + "/*.sock", "127.0.0.1:19000", "unix:" + dir + "/missing/*.sock"}
	d := &Discovery{Targets: targets(t, list...), DropRefusing: false}
	got, err := d.Resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := aps("127.0.0.1:19000", "unix:"+dir+"/a.sock", "unix:"+dir+"/b.sock")
	if !slices.Equal(got, want) {
		t.Errorf("Resolve(%v) = %v, want %v", list, got, want)
	}
	if got[1].Network() != "unix" || got[0].Network() != "tcp" {
		t.Errorf("networks %q, %q; want tcp, unix", got[0].Network(), got[1].Network())
	}
}

// With DropRefusing, a socket file left by a killed worker (it refuses)
// is left out and comes back once a worker listens on it again; a live
// one stays.
func TestResolveDropsStaleSocket(t *testing.T) {
	dir := t.TempDir()
	listenUnix(t, dir+"/live.sock", false)
	listenUnix(t, dir+"/stale.sock", true)
	d := &Discovery{Targets: targets(t, "unix:"+dir+"/*.sock"), DropRefusing: true}
	got, err := d.Resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := aps("unix:" + dir + "/live.sock"); !slices.Equal(got, want) {
		t.Errorf("with a stale socket: Resolve = %v, want %v", got, want)
	}
	// A restarted worker removes the stale file and listens again.
	os.Remove(dir + "/stale.sock")
	listenUnix(t, dir+"/stale.sock", false)
	got, err = d.Resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := aps("unix:"+dir+"/live.sock", "unix:"+dir+"/stale.sock"); !slices.Equal(got, want) {
		t.Errorf("after the restart: Resolve = %v, want %v", got, want)
	}
}

// A socket that is gone by the time it is probed (ENOENT) counts as
// refusing, and the probe dials it over unix.
func TestConnectUnix(t *testing.T) {
	dir := t.TempDir()
	if err := connect(context.Background(), aps("unix:" + dir + "/gone.sock")[0]); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("connect to a missing socket = %v, want ENOENT", err)
	}
	listenUnix(t, dir+"/stale.sock", true)
	if err := connect(context.Background(), aps("unix:" + dir + "/stale.sock")[0]); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("connect to a stale socket = %v, want ECONNREFUSED", err)
	}
	listenUnix(t, dir+"/live.sock", false)
	if err := connect(context.Background(), aps("unix:" + dir + "/live.sock")[0]); err != nil {
		t.Errorf("connect to a live socket = %v, want nil", err)
	}
	d := &Discovery{DropRefusing: true, probe: func(context.Context, Addr) error { return syscall.ENOENT }}
	if got := d.dropRefusing(context.Background(), aps("unix:/run/w.sock")); len(got) != 0 {
		t.Errorf("dropRefusing with ENOENT kept %v", got)
	}
}

// Addr orders TCP addresses as netip.AddrPort does (numerically, so the
// rendered servers.conf stays as before), then socket paths.
func TestAddrCompare(t *testing.T) {
	in := aps("unix:/b.sock", "10.0.0.10:9000", "unix:/a.sock", "10.0.0.9:9000", "[::1]:1")
	slices.SortFunc(in, Addr.Compare)
	want := aps("10.0.0.9:9000", "10.0.0.10:9000", "[::1]:1", "unix:/a.sock", "unix:/b.sock")
	if !slices.Equal(in, want) {
		t.Errorf("sorted = %v, want %v", in, want)
	}
}

// targets parses each of list as a worker target.
func targets(t *testing.T, list ...string) []Target {
	t.Helper()
	out, err := ParseTargets(list)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBudget(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	b := Budget{Hold: time.Minute}
	steps := []struct {
		sec, workers, want int
		lowered            bool // Update's report that the budget fell
	}{
		{0, 2, 2, false},
		{10, 1, 2, false},  // a restart: the other takes the missing share
		{25, 2, 2, false},  // back within Hold
		{30, 4, 4, false},  // a scale-up counts at once
		{40, 3, 4, false},  // one missing ...
		{90, 2, 4, false},  // ... then two, still within Hold of the first miss
		{100, 2, 2, true},  // Hold since the first miss: a scale-down to 2
		{110, 0, 2, false}, // all down
		{170, 0, 0, true},  // gone for Hold: no budget
		{180, 2, 2, false},
	}
	for _, s := range steps {
		got, lowered := b.Update(s.workers, at(s.sec))
		if lowered != s.lowered {
			t.Errorf("at %ds with %d workers: lowered = %v, want %v", s.sec, s.workers, lowered, s.lowered)
		}
		if got != s.want {
			t.Errorf("at %ds with %d workers: budget %d, want %d", s.sec, s.workers, got, s.want)
		}
	}

	never := Budget{}
	never.Update(3, at(0))
	if got, _ := never.Update(1, at(0)); got != 3 {
		t.Errorf("zero Hold: budget %d after a miss, want 3", got)
	}
	if got, lowered := never.Update(1, at(1e6)); lowered || got != 3 {
		t.Error("zero Hold: the budget fell, want it kept")
	}
}

// ParseAddr takes only socket paths nginx can take as they are, named by
// the contract's rule, so that every Addr is safe in its configuration.
func TestParseAddr(t *testing.T) {
	for _, s := range []string{"unix:/run/a;b.sock", "unix:/run/a b.sock", "unix:/run/{.sock", "unix:/run/$x.sock", "unix:/run/a+b.sock", "unix:/run/.x.sock", "unix:/r;un/a.sock", "unix:run/a.sock", "sudoku:9000", "10.0.0.1"} {
		if a, err := ParseAddr(s); err == nil {
			t.Errorf("ParseAddr(%q) = %v, want an error", s, a)
		}
	}
	for _, s := range []string{"unix:/run/sudoku-fcgi/3f2a.sock", "10.0.0.1:9000", "[fd00::1]:9000"} {
		if a, err := ParseAddr(s); err != nil || a.String() != s {
			t.Errorf("ParseAddr(%q) = %v, %v; want it back", s, a, err)
		}
	}
}
