package fcgiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"sudoku-fcgi/fcgi/fcgitest"
)

// echo answers every request with its method, path and header count, and
// a request the child could not parse with 400 and the child's reason.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if reason, ok := MalformedReason(r); ok {
		http.Error(w, "malformed: "+reason, http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "%s %d %d", r.Method, len(r.URL.Path), len(r.Header))
})

// start runs Serve with h and opt on a loopback port until the test ends.
func start(t *testing.T, h http.Handler, opt Options) string {
	t.Helper()
	ln := fcgitest.Listen(t, "tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, h, opt) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v", err)
		}
	})
	return ln.Addr().String()
}

// paramsRecords returns FCGI_PARAMS records holding params, each at most
// 32 KiB, and the empty record that ends them.
func paramsRecords(id uint16, params []byte) []byte {
	var b []byte
	for len(params) > 0 {
		n := min(len(params), 32<<10)
		b = append(b, fcgitest.Record(fcgitest.TypeParams, id, params[:n])...)
		params = params[n:]
	}
	return append(b, fcgitest.Record(fcgitest.TypeParams, id, nil)...)
}

// nginxParams encodes the params nginx sends with Debian's fastcgi_params
// and the shipped overrides (a superset of nginx/sudoku-fastcgi.conf's) for
// a request with the given path and query and nHeaders header lines "a:"
// (nginx 1.22 passes each, duplicates too, as HTTP_A).
func nginxParams(path, query string, nHeaders int) []byte {
	uri := path
	if query != "" {
		uri += "?" + query
	}
	var b []byte
	for _, kv := range [][2]string{
		{"QUERY_STRING", query}, {"REQUEST_METHOD", "GET"}, {"CONTENT_TYPE", ""}, {"CONTENT_LENGTH", ""},
		{"SCRIPT_NAME", path}, {"REQUEST_URI", uri}, {"DOCUMENT_URI", path},
		{"SERVER_PROTOCOL", "HTTP/1.1"}, {"REQUEST_SCHEME", "https"}, {"HTTPS", "on"},
		{"GATEWAY_INTERFACE", "CGI/1.1"}, {"SERVER_SOFTWARE", "nginx"},
		{"REMOTE_ADDR", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"}, {"REMOTE_PORT", "65535"},
		{"SERVER_ADDR", "2001:db8:ffff:ffff:ffff:ffff:ffff:fffe"}, {"SERVER_PORT", "8443"},
		{"SERVER_NAME", "sudoku.example.com"}, {"HTTP_X_REQUEST_ID", strings.Repeat("f", 32)},
		{"HTTP_HOST", "sudoku.example.com"}, {"HTTP_PROXY", ""},
	} {
		b = append(b, fcgitest.Pair(kv[0], kv[1])...)
	}
	for range nHeaders {
		b = append(b, fcgitest.Pair("HTTP_A", "")...)
	}
	return b
}

// Issue 31: nginx/nginx.conf's large_client_header_buffers 4 8k admit a
// request line up to 8 KiB and up to 32 KiB of header lines. As params the
// URI appears up to three times with Debian's fastcgi_params (REQUEST_URI,
// SCRIPT_NAME, DOCUMENT_URI; or QUERY_STRING) and a 3-byte header line
// "a:\n" grows to the 8 bytes of HTTP_A="". With the old 32 KiB cap Serve closed the connection on such a
// request, and nginx answered 503 after a retry; it gets its answer now.
func TestLargestNginxRequest(t *testing.T) {
	const lineMax = 8 << 10                           // one large header buffer: the request line
	const uriMax = lineMax - len("GET  HTTP/1.1\r\n") // what fits of the URI
	const headerLines = (32 << 10) / len("a:\n")      // 32 KiB of the shortest lines
	addr := start(t, echo, DefaultOptions())
	for _, tt := range []struct {
		name, path, query string
	}{
		{"long path", "/" + strings.Repeat("p", uriMax-1), ""},
		{"long query", "/sudoku", "puzzle=" + strings.Repeat("0", uriMax-len("/sudoku?puzzle="))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			params := nginxParams(tt.path, tt.query, headerLines)
			if len(params) <= 96<<10 {
				t.Fatalf("params are %d bytes, want the worst case above 96 KiB", len(params))
			}
			t.Logf("params: %d bytes", len(params))
			c := fcgitest.Dial(t, addr)
			req := append(fcgitest.BeginRequest(1, true), paramsRecords(1, params)...)
			c.Send(append(req, fcgitest.Record(fcgitest.TypeStdin, 1, nil)...))
			resp, err := c.Read(1)
			if err != nil {
				t.Fatalf("request with %d bytes of params: %v, want its answer (the connection closed?)", len(params), err)
			}
			if want := fmt.Sprintf("GET %d 3", len(tt.path)); resp.Status != 200 || string(resp.Body) != want {
				t.Errorf("answer = %d %q, want 200 %q", resp.Status, resp.Body, want)
			}
		})
	}
}

// Params over MaxParamsBytes still close the connection.
func TestParamsOverTheCap(t *testing.T) {
	opt := DefaultOptions()
	opt.MaxParamsBytes = 4096
	c := fcgitest.Dial(t, start(t, echo, opt))
	c.Send(append(fcgitest.BeginRequest(1, true), paramsRecords(1, nginxParams("/", "", 1000))...))
	if !c.ClosedByPeer(5 * time.Second) {
		t.Fatal("connection still open after params over MaxParamsBytes")
	}
}

func TestOptionsRefused(t *testing.T) {
	ln := fcgitest.Listen(t, "tcp", "127.0.0.1:0")
	for name, set := range map[string]func(*Options){
		"zero":            func(o *Options) { *o = Options{} },
		"no conns":        func(o *Options) { o.MaxConns = 0 },
		"no params":       func(o *Options) { o.MaxParamsBytes = 0 },
		"no drain":        func(o *Options) { o.DrainTimeout = 0 },
		"negative linger": func(o *Options) { o.Linger = -time.Second },
	} {
		o := DefaultOptions()
		set(&o)
		if err := Serve(context.Background(), ln, echo, o); err == nil {
			t.Errorf("Serve with %s options = nil, want an error", name)
		}
	}
}

// A request the child cannot parse reaches the handler as a stand-in
// that MalformedReason recognises, and counts in the metrics.
func TestMalformedReachesHandler(t *testing.T) {
	m := NewMetrics("test")
	opt := DefaultOptions()
	opt.Metrics = m
	c := fcgitest.Dial(t, start(t, echo, opt))
	resp := c.Do(1, "GET", "/x", "a%zz", nil)
	if resp.Status != 400 || !strings.Contains(string(resp.Body), "malformed: ") || len(resp.Stderr) != 0 {
		t.Errorf("bad Host: %d %q, stderr %q; want the handler's 400", resp.Status, resp.Body, resp.Stderr)
	}
	if resp := c.Do(2, "GET", "/x", "h", nil); resp.Status != 200 || string(resp.Body) != "GET 2 0" {
		t.Errorf("after it: %d %q, want 200 \"GET 2 0\"", resp.Status, resp.Body)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	want := `
# HELP test_fastcgi_malformed_requests_total Requests net/http/fcgi could not turn into an http.Request (bad Host, URI, length), answered 400.
# TYPE test_fastcgi_malformed_requests_total counter
test_fastcgi_malformed_requests_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "test_fastcgi_malformed_requests_total"); err != nil {
		t.Error(err)
	}
}

func TestMetrics(t *testing.T) {
	m := NewMetrics("sudoku")
	opt := DefaultOptions()
	opt.Metrics, opt.MaxConnsPerPeer = m, 1
	addr := start(t, echo, opt)
	a := fcgitest.Dial(t, addr)
	a.Do(1, "GET", "/", "h", nil)
	if !fcgitest.Dial(t, addr).ClosedByPeer(5 * time.Second) {
		t.Fatal("second connection from one peer not closed")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	want := `
# HELP sudoku_fastcgi_connections Open FastCGI connections.
# TYPE sudoku_fastcgi_connections gauge
sudoku_fastcgi_connections 1
# HELP sudoku_fastcgi_connections_accepted_total FastCGI connections accepted.
# TYPE sudoku_fastcgi_connections_accepted_total counter
sudoku_fastcgi_connections_accepted_total 1
# HELP sudoku_fastcgi_connections_closed_by_worker_total FastCGI connections the worker closed itself, by reason (limit: per-connection record bounds; drain: shutdown; peer_limit: over -max-conns-per-peer from one address or user).
# TYPE sudoku_fastcgi_connections_closed_by_worker_total counter
sudoku_fastcgi_connections_closed_by_worker_total{reason="drain"} 0
sudoku_fastcgi_connections_closed_by_worker_total{reason="limit"} 0
sudoku_fastcgi_connections_closed_by_worker_total{reason="peer_limit"} 1
`
	names := []string{"sudoku_fastcgi_connections", "sudoku_fastcgi_connections_accepted_total", "sudoku_fastcgi_connections_closed_by_worker_total"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	if m.Open() != 1 {
		t.Errorf("Open() = %d, want 1", m.Open())
	}
}

// TestRequestsInTheWorker: sudoku_fastcgi_requests counts requests from
// FCGI_BEGIN_REQUEST to FCGI_END_REQUEST, their wait for the handler too,
// and request_seconds_total integrates that number over time; a
// connection that closes ends its unanswered requests.
func TestRequestsInTheWorker(t *testing.T) {
	m := NewMetrics("sudoku")
	opt := DefaultOptions()
	opt.Metrics = m
	release := make(chan struct{})
	entered := make(chan struct{}, 3)
	hold := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	})
	addr := start(t, hold, opt)
	a, b, gone := fcgitest.Dial(t, addr), fcgitest.Dial(t, addr), fcgitest.Dial(t, addr)
	t0 := time.Now()
	a.Send(fcgitest.Request(1, "GET", "/", "h", nil, nil))
	b.Send(fcgitest.Request(1, "GET", "/", "h", nil, nil))
	gone.Send(fcgitest.Request(1, "GET", "/", "h", nil, nil))
	for range 3 {
		<-entered
	}
	if active, _ := m.requestTotals(); active != 3 {
		t.Errorf("three requests in handlers: requests = %d, want 3", active)
	}
	gone.Conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for active, _ := m.requestTotals(); active != 2 && time.Now().Before(deadline); active, _ = m.requestTotals() {
		time.Sleep(5 * time.Millisecond)
	}
	if active, _ := m.requestTotals(); active != 2 {
		t.Errorf("after a client closed: requests = %d, want 2", active)
	}
	time.Sleep(100 * time.Millisecond)
	close(release)
	for _, c := range []*fcgitest.Client{a, b} {
		if _, err := c.Read(1); err != nil {
			t.Fatal(err)
		}
	}
	held := time.Since(t0).Seconds()
	active, seconds := m.requestTotals()
	if active != 0 {
		t.Errorf("all answered: requests = %d, want 0", active)
	}
	// Two requests held for over 100 ms each, the third until its close.
	if seconds < 0.2 || seconds > 3*held {
		t.Errorf("request seconds = %.3f, want at least 0.2 and at most 3 x %.3f", seconds, held)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
