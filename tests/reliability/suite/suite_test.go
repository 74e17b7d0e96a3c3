package suite

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestParseNginxConf(t *testing.T) {
	conf := `
    fastcgi_read_timeout 35s;
    fastcgi_read_timeout 5s;   # comment
    # fastcgi_read_timeout 1s;
    fastcgi_connect_timeout 500ms;
    upstream u {
        server 172.18.0.3:9000 max_fails=0 fail_timeout=3s;
    }`
	c := parseNginxConf(conf)
	if c.readTimeout != 5*time.Second || c.connectTimeout != 500*time.Millisecond || c.failTimeout != 3*time.Second || c.maxFails != 0 {
		t.Errorf("parseNginxConf = %+v, want read 5s (the shortest), connect 500ms, fail_timeout 3s, max_fails 0", c)
	}
	d := parseNginxConf("")
	if d.readTimeout != 60*time.Second || d.failTimeout != 10*time.Second || d.maxFails != 1 {
		t.Errorf("parseNginxConf(\"\") = %+v, want nginx defaults", d)
	}
}

// fcgiTarget reads where a worker container serves FastCGI from docker
// inspect: a socket file on a volume (named after the hostname or the
// SUDOKU_FCGI_ID in a directory) or its network address.
func TestFcgiTarget(t *testing.T) {
	worker := func(env ...string) containerState {
		var cs containerState
		cs.ID = "3f2a9c1b77d0aa"
		cs.Config.Hostname = "3f2a9c1b77d0"
		cs.Config.Env = append([]string{"PATH=/usr/bin"}, env...)
		cs.Mounts = append(cs.Mounts, struct{ Type, Name, Destination string }{"volume", "proj_fcgi-sockets", "/run/sudoku-fcgi"})
		cs.NetworkSettings.Networks = map[string]struct{ IPAddress string }{"proj_default": {"172.18.0.3"}}
		return cs
	}
	for _, tt := range []struct {
		env          []string
		target, from string
	}{
		{[]string{"SUDOKU_FCGI_LISTEN=/run/sudoku-fcgi/"}, "unix:/run/sudoku-fcgi/3f2a9c1b77d0.sock", "proj_fcgi-sockets:/run/sudoku-fcgi"},
		{[]string{"SUDOKU_FCGI_LISTEN=/run/sudoku-fcgi/", "SUDOKU_FCGI_ID=w1"}, "unix:/run/sudoku-fcgi/w1.sock", "proj_fcgi-sockets:/run/sudoku-fcgi"},
		{[]string{"SUDOKU_FCGI_LISTEN=/run/sudoku-fcgi/x.sock"}, "unix:/run/sudoku-fcgi/x.sock", "proj_fcgi-sockets:/run/sudoku-fcgi"},
		{[]string{"SUDOKU_FCGI_LISTEN=:9000"}, "172.18.0.3:9000", ""},
	} {
		target, mounts, err := fcgiTarget(worker(tt.env...))
		if err != nil || target != tt.target || strings.Join(mounts, ",") != tt.from {
			t.Errorf("fcgiTarget(%v) = %q, %q, %v; want %q, %q", tt.env, target, mounts, err, tt.target, tt.from)
		}
	}
	if target, _, err := fcgiTarget(worker("SUDOKU_FCGI_LISTEN=/elsewhere/")); err == nil {
		t.Errorf("fcgiTarget with a socket on no volume = %q, want an error", target)
	}
}

func TestRecoveryTime(t *testing.T) {
	var recs []record
	for s := 0; s < 10; s++ {
		lat := time.Millisecond
		if s < 3 {
			lat = 100 * time.Millisecond
		}
		for i := 0; i < 100; i++ {
			recs = append(recs, record{At: time.Duration(s)*time.Second + time.Duration(i)*time.Millisecond, Latency: lat, Kind: kindOK})
		}
	}
	if got := recoveryTime(recs, 5*time.Millisecond, 10); got != 3*time.Second {
		t.Errorf("recoveryTime = %v, want 3s", got)
	}
	// Two slow requests in one late second: that window's own p99 would
	// be slow, but the p99 of everything from 3 s on is not.
	recs[850].Latency, recs[851].Latency = 20*time.Millisecond, 20*time.Millisecond
	if got := recoveryTime(recs, 5*time.Millisecond, 10); got != 3*time.Second {
		t.Errorf("recoveryTime with one slow late second = %v, want 3s", got)
	}
	recs[950].Kind = kindBusy // a failure is never recovered
	recs[951].Kind = kindBusy
	if got := recoveryTime(recs, 5*time.Millisecond, 10); got != 10*time.Second {
		t.Errorf("recoveryTime with a late failure = %v, want 10s", got)
	}
}

func TestPhaseRecordsFromNginxLog(t *testing.T) {
	start := time.Date(2026, 11, 30, 16, 0, 0, 700e6, time.UTC)
	at := func(sec int) time.Time { return time.Date(2026, 11, 30, 16, 0, sec, 0, time.UTC) }
	reqs := []loggedRequest{
		{Time: at(0), Status: 200, RequestTime: 0.002, UserAgent: userAgent("after")},
		{Time: at(3), Status: 200, RequestTime: 0.040, UserAgent: userAgent("after")},
		{Time: at(3), Status: 503, RequestTime: 0, UserAgent: userAgent("after")},
		{Time: at(0), Status: 503, RequestTime: 0.001, UserAgent: userAgent("3C")},
		{Time: at(1), Status: 200, RequestTime: 0.300, UserAgent: userAgent("3C")},
	}
	recs := phaseRecords(reqs, "after", start)
	if len(recs) != 3 {
		t.Fatalf("phaseRecords = %d records, want the 3 of the phase", len(recs))
	}
	if recs[1].At != 3*time.Second || recs[1].Latency != 40*time.Millisecond || recs[1].Kind != kindOK {
		t.Errorf("record 1 = %+v, want 3s after the phase's first second, 40ms, ok", recs[1])
	}
	if !recs[2].failed() {
		t.Errorf("a 503 in the phase is not a failure: %+v", recs[2])
	}
	if got := phaseTimes(reqs, "3C", 503); len(got) != 1 || got[0] != time.Millisecond {
		t.Errorf("phaseTimes(3C, 503) = %v, want [1ms]", got)
	}
}

func TestSlope(t *testing.T) {
	var ps []point
	for i := 0; i < 60; i++ {
		tm := time.Duration(i) * 10 * time.Second
		ps = append(ps, point{t: tm, rss: int64(20<<20) + int64(tm.Minutes()*float64(2<<20))})
	}
	if got := slopeMiBPerMin(ps, time.Minute); got < 1.99 || got > 2.01 {
		t.Errorf("slopeMiBPerMin = %.3f, want 2", got)
	}
}

func TestHostileRequestsAreBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	kinds := map[string]bool{}
	for i := 0; i < 5000; i++ {
		k, req := hostileRequest(r, []string{"000000010400000000020000000000050407008000300001090000300400200050100000000806000"})
		kinds[k] = true
		if len(req) > 3<<20 {
			t.Fatalf("%s request is %d bytes", k, len(req))
		}
	}
	if len(kinds) < 20 {
		t.Errorf("only %d kinds generated", len(kinds))
	}
}

// TestDriveMaxInFlight: with the server holding every request, a load
// phase sends MaxInFlight of them and counts the rest as skipped, not sent,
// and the summary keeps them out of Sent but counts them as failures.
func TestDriveMaxInFlight(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	go func() {
		time.Sleep(300 * time.Millisecond)
		close(release)
	}()
	puzzles, _, err := readPuzzles("../testdata/test1000")
	if err != nil {
		t.Fatal(err)
	}
	res := drive(t.Context(), srv.URL, loadSpec{Name: "t", Rate: 100, Duration: 200 * time.Millisecond, Conns: 8,
		MaxInFlight: 3, Puzzles: puzzles, Timeout: 5 * time.Second}, io.Discard)
	sum := res.summary(200 * time.Millisecond)
	if len(res.Records) != 3 || sum.Sent != 3 || sum.Skipped != 17 || sum.Kinds[kindBusy] != 3 || sum.failures() != 20 {
		t.Errorf("sent %d, skipped %d, 503 %d, failures %d; want 3, 17, 3, 20", sum.Sent, sum.Skipped, sum.Kinds[kindBusy], sum.failures())
	}
}

func TestSelectScenarios(t *testing.T) {
	all := []scenario{{name: "internal-endpoints"}, {name: "overload"}, {name: "bursts"}, {name: "slow-clients"}}
	names := func(scs []scenario) string {
		var n []string
		for _, sc := range scs {
			n = append(n, sc.name)
		}
		return strings.Join(n, ",")
	}
	for _, tc := range []struct {
		run, skip      string
		want, wantSkip string
	}{
		{"", "", "internal-endpoints,overload,bursts,slow-clients", ""},
		{"", "^overload$", "internal-endpoints,bursts,slow-clients", "overload"},
		{"o", "^overload$", "internal-endpoints,slow-clients", "overload"},
		{"^b", "^overload$", "bursts", ""},
		{"overload|bursts", "bursts", "overload", "bursts"},
	} {
		run, skipped, err := selectScenarios(all, tc.run, tc.skip)
		if err != nil {
			t.Fatalf("run %q skip %q: %v", tc.run, tc.skip, err)
		}
		if got := names(run); got != tc.want {
			t.Errorf("run %q skip %q: ran %q, want %q", tc.run, tc.skip, got, tc.want)
		}
		if got := strings.Join(skipped, ","); got != tc.wantSkip {
			t.Errorf("run %q skip %q: not run %q, want %q", tc.run, tc.skip, got, tc.wantSkip)
		}
	}
	// Bad regexps, and selections that leave nothing to run.
	for _, bad := range [][2]string{{"(", ""}, {"", "["}, {"no-such-scenario", ""}, {"overload", "overload"}, {"", "."}} {
		if _, _, err := selectScenarios(all, bad[0], bad[1]); err == nil {
			t.Errorf("run %q skip %q: no error", bad[0], bad[1])
		}
	}
}
