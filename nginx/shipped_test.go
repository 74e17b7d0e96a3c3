package nginx

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/fcgi"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"sudoku-fcgi/nginx/conf"
	"sudoku-fcgi/nginx/nginxtest"
)

// shippedNginx is the project's own nginx configuration (RenderSite, the
// files the image and nginx/render-host.sh have) run by a Supervisor with
// the host's nginx, in front of one FastCGI worker (net/http/fcgi).
type shippedNginx struct {
	port    int
	metrics *Metrics
	log     *lockedBuffer // nginx's access log (stdout)
	done    <-chan error
	stop    context.CancelFunc
}

// lockedBuffer is a bytes.Buffer safe for the supervisor's copy and the
// test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startShipped renders the shipped configuration with an HTTP listen of
// listen (a port, or an address and port, "%d" standing for a free port)
// and runs it; worker answers every FastCGI request (nil: no worker
// listens, every request finds none). set adjusts the Supervisor before
// Run.
func startShipped(t *testing.T, listen string, worker http.Handler, set func(*Supervisor)) *shippedNginx {
	t.Helper()
	bin := nginxtest.NeedNginx(t)
	dir := t.TempDir()
	port, statusPort, chPort := nginxtest.FreePort(t), nginxtest.FreePort(t), nginxtest.FreePort(t)
	wln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	workerAddr := wln.Addr().String()
	if worker != nil {
		go fcgi.Serve(wln, worker)
		t.Cleanup(func() { wln.Close() })
	} else {
		wln.Close() // refused: nginx finds no worker that takes the request
	}
	_, file, _, _ := runtime.Caller(0)
	site := conf.Site{
		RunDir: filepath.Join(dir, "run"), WWWRoot: filepath.Join(filepath.Dir(file), "www"),
		StatusListen:    fmt.Sprintf("127.0.0.1:%d", statusPort),
		ChallengeListen: fmt.Sprintf("127.0.0.1:%d", chPort), TempDir: filepath.Join(dir, "tmp"),
	}
	if err := RenderSite(dir, site); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(site.TempDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// nginx runs as root here: its workers read the test's private
	// directories. The rest is the shipped nginx.conf as it is.
	cf := filepath.Join(dir, "test.conf")
	if err := os.WriteFile(cf, []byte("user root;\ninclude nginx.conf;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &shippedNginx{port: port, log: &lockedBuffer{}, metrics: NewMetrics()}
	sup := &Supervisor{Config: Config{
		Bin: bin, Prefix: dir, Conf: cf, RunDir: site.RunDir, WorkerProcesses: 1,
		HTTPListen: fmt.Sprintf(listen, port), Workers: targets(t, workerAddr), Upstream: conf.DefaultUpstream,
		ResolveInterval: time.Second, BudgetHold: time.Minute, ChallengeListen: site.ChallengeListen,
	}, Stdout: s.log, Stderr: io.Discard, Log: nginxtest.Logger(t), Metrics: s.metrics}
	if set != nil {
		set(sup)
	}
	serveChallenge(t, sup)
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	finished := make(chan struct{})
	s.done = nginxtest.Background(func() error { defer close(finished); return sup.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(20 * time.Second):
			t.Error("Run did not return within 20s of the cancel")
		}
	})
	// The HTTP port is the supervisor's socket and takes connections before
	// nginx runs; the status port is nginx's own, so an answer there says
	// nginx is up.
	nginxtest.WaitUntil(t, 10*time.Second, "nginx answers", func() error {
		nginxtest.Running(t, s.done, "Run")
		return nginxtest.Answers200(fmt.Sprintf("http://127.0.0.1:%d/stub_status", statusPort))
	})
	return s
}

// do sends req from the source address from (empty: any) and returns the
// answer with its body read.
func (s *shippedNginx) do(t *testing.T, from string, req *http.Request) (*http.Response, string) {
	t.Helper()
	d := &net.Dialer{Timeout: 2 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s from %q: %v", req.Method, req.URL, from, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
	}
	return resp, string(b)
}

// url is the URL of path on the listener, at host (an address of this
// machine).
func (s *shippedNginx) url(host, path string) string {
	return fmt.Sprintf("http://%s%s", net.JoinHostPort(host, fmt.Sprint(s.port)), path)
}

// accessLine waits for nginx's access-log line of the request id and
// returns it decoded.
func (s *shippedNginx) accessLine(t *testing.T, id string) map[string]any {
	t.Helper()
	var line map[string]any
	nginxtest.WaitUntil(t, 5*time.Second, "access-log line of "+id, func() error {
		for _, l := range strings.Split(s.log.String(), "\n") {
			if strings.Contains(l, `"request_id":"`+id+`"`) {
				return json.Unmarshal([]byte(l), &line)
			}
		}
		return fmt.Errorf("no line with request_id %s", id)
	})
	return line
}

// solver is a worker that answers every request at once, or, for a
// query with hold=1, holds it: it reports the request on held (when not
// nil), sends its headers and then a space every 200 ms, within nginx's
// read timeout, until release is closed.
func solver(release <-chan struct{}, held chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Sudoku-Worker", "w1")
		if r.URL.Query().Get("hold") == "1" {
			if held != nil {
				held <- struct{}{}
			}
			for {
				io.WriteString(w, " ")
				w.(http.Flusher).Flush()
				select {
				case <-release:
					io.WriteString(w, `{"solution":"x"}`+"\n")
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
		io.WriteString(w, `{"solution":"x"}`+"\n")
	})
}

// nonLoopback is an IPv4 address of this machine that is not loopback, so
// that a test can be a peer that is not.
func nonLoopback(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Skip("no IPv4 address but loopback on this machine: no peer that is not loopback")
	return ""
}

// TestShippedLoopbackExemptOnlyFromLoopbackPeer (the loopback trap): the
// per-client limits leave loopback alone only when the connection's own
// peer is loopback and so is the client it names. A trusted balancer that
// is not on loopback forwarding X-Forwarded-For: 127.0.0.1 stays counted;
// a balancer on loopback forwarding a client makes that client counted.
// nginx's access log shows what the limit did: PASSED when counted, empty
// for an exempt client.
func TestShippedLoopbackExemptOnlyFromLoopbackPeer(t *testing.T) {
	peer := nonLoopback(t)
	s := startShipped(t, "%d", solver(nil, nil), func(sup *Supervisor) {
		sup.Config.RealIPFrom, _ = conf.ParsePrefixes([]string{peer, "127.0.0.1"})
	})
	for _, tc := range []struct {
		what, from, xff, client, limit string
	}{
		{"balancer not on loopback forwarding 127.0.0.1", peer, "127.0.0.1", "127.0.0.1", "PASSED"},
		{"balancer not on loopback forwarding ::1", peer, "::1", "::1", "PASSED"},
		{"peer not on loopback, no header", peer, "", peer, "PASSED"},
		{"loopback peer, no header (the host stack)", "127.0.0.1", "", "127.0.0.1", ""},
		{"balancer on loopback forwarding a client", "127.0.0.1", "203.0.113.5", "203.0.113.5", "PASSED"},
		{"balancer on loopback forwarding 127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1", ""},
	} {
		req, _ := http.NewRequest("GET", s.url(tc.from, "/sudoku?puzzle=1"), nil)
		if tc.xff != "" {
			req.Header.Set("X-Forwarded-For", tc.xff)
		}
		resp, _ := s.do(t, tc.from, req)
		line := s.accessLine(t, resp.Header.Get("X-Request-Id"))
		if resp.StatusCode != 200 || line["remote_addr"] != tc.client || line["limit_req"] != tc.limit {
			t.Errorf("%s: %d, logged as client %v with limit_req %q; want 200, client %s, limit_req %q",
				tc.what, resp.StatusCode, line["remote_addr"], line["limit_req"], tc.client, tc.limit)
		}
	}
}

// TestShippedClientLimitIs429 ("your limit" and "service full"): a client
// over its own rate gets 429 (with too many GETs in flight, 503: /sudoku
// also holds the cap for all clients, and nginx has one limit_conn status
// per location)
// with a JSON body, a Retry-After of 1-3 s and the RateLimit-Policy of
// its route, logged as refused client_limit; when no worker takes a
// request nginx answers 503, logged as service_full.
func TestShippedClientLimitIs429(t *testing.T) {
	release, held := make(chan struct{}), make(chan struct{}, 64)
	s := startShipped(t, "127.0.0.1:%d", solver(release, held), func(sup *Supervisor) {
		sup.Config.RealIPFrom, _ = conf.ParsePrefixes([]string{"127.0.0.1"})
	})
	get := func(client, query string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", s.url("127.0.0.1", "/sudoku?"+query), nil)
		req.Header.Set("X-Forwarded-For", client)
		return s.do(t, "127.0.0.1", req)
	}
	check429 := func(what string, resp *http.Response, body, limitReq, limitConn string) {
		t.Helper()
		var e struct{ Error string }
		if resp.StatusCode != 429 || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Error, "too many requests from this client") {
			t.Fatalf("%s: %d %q; want 429 with the client's JSON error", what, resp.StatusCode, body)
		}
		if ra := resp.Header.Get("Retry-After"); ra != "1" && ra != "2" && ra != "3" {
			t.Errorf("%s: Retry-After %q, want 1, 2 or 3", what, ra)
		}
		if p := resp.Header.Get("RateLimit-Policy"); p != `"client";q=100;w=1` {
			t.Errorf("%s: RateLimit-Policy %q", what, p)
		}
		line := s.accessLine(t, resp.Header.Get("X-Request-Id"))
		if line["refused"] != "client_limit" || line["limit_req"] != limitReq || line["limit_conn"] != limitConn || line["status"] != 429.0 {
			t.Errorf("%s: logged %v; want status 429, refused client_limit, limit_req %s, limit_conn %s", what, line, limitReq, limitConn)
		}
		zone := "sudoku_req"
		if limitConn == "REJECTED" {
			zone = "sudoku_client_conn"
		}
		nginxtest.WaitUntil(t, 5*time.Second, what+" counted by zone", func() error {
			if n := metricValue(t, s.metrics, "nginx_limited_total", "zone", zone); n < 1 {
				return fmt.Errorf("sudoku_edge_nginx_limited_total{zone=%q} = %v", zone, n)
			}
			return nil
		})
	}

	// In flight: 64 held from one client, the 65th is its own limit; another
	// client still gets its answer.
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, body := get("203.0.113.1", "hold=1"); resp.StatusCode != 200 {
				t.Errorf("a held request: %d %q", resp.StatusCode, body)
			}
		}()
	}
	for i := range 64 {
		select {
		case <-held:
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of 64 held requests reached the worker", i)
		}
	}
	// /sudoku holds the concurrency cap for all clients too, and nginx has
	// one limit_conn status per location: the 65th gets the service's 503.
	resp, body := get("203.0.113.1", "n=65")
	// (nginx's own 503s keep one stdout line in 16: the zone's count is the record.)
	if resp.StatusCode != 503 || !strings.Contains(body, "service full") {
		t.Errorf("65th request in flight: %d %q; want 503 service full", resp.StatusCode, body)
	}
	nginxtest.WaitUntil(t, 5*time.Second, "the 65th counted by zone", func() error {
		if n := metricValue(t, s.metrics, "nginx_limited_total", "zone", "sudoku_client_conn"); n < 1 {
			return fmt.Errorf("sudoku_edge_nginx_limited_total{zone=sudoku_client_conn} = %v", n)
		}
		return nil
	})
	if resp, body := get("203.0.113.2", "other=1"); resp.StatusCode != 200 {
		t.Errorf("another client meanwhile: %d %q, want 200", resp.StatusCode, body)
	}
	close(release)
	wg.Wait()

	// Rate: 100 r/s with a burst of 200. flood sends up to n requests from
	// one client, 32 at a time (under its 64 in flight), and returns the
	// 429s: 32 in flight outrun the rate on any machine that answers a GET
	// within 300 ms, however slow its requests are one after another.
	flood := func(n int, enough func(refused []*http.Response, bodies []string) bool) ([]*http.Response, []string) {
		var mu sync.Mutex
		var refused []*http.Response
		var bodies []string
		sem := make(chan struct{}, 32)
		var wg sync.WaitGroup
		for i := range n {
			mu.Lock()
			done := enough(refused, bodies)
			mu.Unlock()
			if done {
				break
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				if resp, body := get("203.0.113.3", fmt.Sprint("i=", i)); resp.StatusCode == 429 {
					mu.Lock()
					refused, bodies = append(refused, resp), append(bodies, body)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return refused, bodies
	}
	refused, bodies := flood(2000, func(r []*http.Response, _ []string) bool { return len(r) > 0 })
	if len(refused) == 0 {
		t.Fatal("2,000 requests from one client, 32 at a time, without a 429")
	}
	check429("over the rate", refused[0], bodies[0], "REJECTED", "")

	// Retry-After differs between requests (ids are random): refused
	// requests show more than one value.
	retryAfters := func(r []*http.Response) map[string]int {
		seen := map[string]int{}
		for _, resp := range r {
			seen[resp.Header.Get("Retry-After")]++
		}
		return seen
	}
	refused, _ = flood(2000, func(r []*http.Response, _ []string) bool { return len(retryAfters(r)) >= 2 })
	seen := retryAfters(refused)
	if len(seen) < 2 {
		t.Errorf("Retry-After of refused requests: %v, want it spread over 1-3", seen)
	}
}

// TestShippedNoWorkerIs503: no worker takes the request (the only one
// refuses connections): 503, service full, with Retry-After 1-3.
func TestShippedNoWorkerIs503(t *testing.T) {
	s := startShipped(t, "127.0.0.1:%d", nil, nil)
	req, _ := http.NewRequest("GET", s.url("127.0.0.1", "/sudoku?puzzle=1"), nil)
	resp, body := s.do(t, "", req)
	if resp.StatusCode != 503 || !strings.Contains(body, `"error":"no worker available`) {
		t.Fatalf("no worker: %d %q, want 503 no worker available", resp.StatusCode, body)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "1" && ra != "2" && ra != "3" {
		t.Errorf("Retry-After %q, want 1, 2 or 3", ra)
	}
	if line := s.accessLine(t, resp.Header.Get("X-Request-Id")); line["refused"] != "service_full" {
		t.Errorf("logged %v, want refused service_full", line)
	}
}

// TestShippedIndexAndMethods: a client that does not ask for HTML gets the
// API's index at /, an unknown path a 404 that names what exists, and
// /openapi.yaml refuses other methods than GET and HEAD with 405 and
// Allow, as /sudoku and /sudoku/stats do with theirs.
func TestShippedIndexAndMethods(t *testing.T) {
	s := startShipped(t, "127.0.0.1:%d", solver(nil, nil), nil)
	send := func(method, path, accept string) (*http.Response, string) {
		req, _ := http.NewRequest(method, s.url("127.0.0.1", path), strings.NewReader(""))
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		return s.do(t, "", req)
	}
	resp, body := send("GET", "/", "*/*")
	var index struct {
		Description string
		Routes      map[string]string
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &index) != nil || index.Description != "/openapi.yaml" ||
		index.Routes["POST /sudoku"] == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("GET / as curl: %d %s %q; want 200 and a JSON index pointing to /openapi.yaml", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if resp, body := send("GET", "/", "text/html"); resp.StatusCode != 200 || !strings.Contains(body, "<html") {
		t.Errorf("GET / as a browser: %d %.80q; want the page", resp.StatusCode, body)
	}
	resp, body = send("GET", "/nothing-here", "")
	if resp.StatusCode != 404 || !strings.Contains(body, "/openapi.yaml") || !strings.Contains(body, "/sudoku/stats") {
		t.Errorf("GET /nothing-here: %d %q; want a 404 naming /sudoku, /sudoku/stats and /openapi.yaml", resp.StatusCode, body)
	}
	for _, tc := range []struct{ method, path, allow string }{
		{"POST", "/openapi.yaml", "GET, HEAD"},
		{"PUT", "/openapi.yaml", "GET, HEAD"},
		{"DELETE", "/openapi.yaml", "GET, HEAD"},
		{"POST", "/", "GET, HEAD"},
		{"DELETE", "/sudoku/stats", "GET, HEAD"},
		{"PUT", "/sudoku", "GET, HEAD, POST"},
	} {
		resp, body := send(tc.method, tc.path, "")
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != tc.allow || !strings.Contains(body, `"error":"method not allowed"`) {
			t.Errorf("%s %s: %d Allow %q %q; want 405, Allow %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), body, tc.allow)
		}
	}
	if resp, body := send("GET", "/openapi.yaml", ""); resp.StatusCode != 200 || !strings.Contains(body, "openapi:") {
		t.Errorf("GET /openapi.yaml: %d %.60q", resp.StatusCode, body)
	}
}

// TestShippedProxyProtocol: with ProxyProtocol the HTTP listen takes a
// PROXY protocol v1 header; from a configured balancer its source address
// is the client's (the access log and the per-client limit use it), from
// any other peer the peer's own address stays the client's; a connection
// without the header gets no answer.
func TestShippedProxyProtocol(t *testing.T) {
	s := startShipped(t, "127.0.0.1:%d", solver(nil, nil), func(sup *Supervisor) {
		sup.Config.RealIPFrom, _ = conf.ParsePrefixes([]string{"127.0.0.1"})
		sup.Config.ProxyProtocol = true
	})
	// raw sends one request over a new connection from the source address
	// from, after the header when it is not empty, and returns what nginx
	// answers until it closes the connection.
	raw := func(from, header string) string {
		t.Helper()
		d := &net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "%sGET /sudoku?puzzle=1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", header)
		b, _ := io.ReadAll(c)
		return string(b)
	}
	requestID := func(answer string) string {
		for _, l := range strings.Split(answer, "\r\n") {
			if v, ok := strings.CutPrefix(l, "X-Request-Id: "); ok {
				return v
			}
		}
		t.Fatalf("no X-Request-Id in %q", answer)
		return ""
	}
	for _, tc := range []struct{ what, from, header, client, limit string }{
		{"balancer", "127.0.0.1", "PROXY TCP4 203.0.113.7 127.0.0.1 40000 8080\r\n", "203.0.113.7", "PASSED"},
		{"balancer forwarding loopback", "127.0.0.1", "PROXY TCP4 127.0.0.9 127.0.0.1 40000 8080\r\n", "127.0.0.9", ""},
		{"not a balancer: its header is ignored (a loopback peer, exempt)", "127.0.0.2", "PROXY TCP4 198.51.100.1 127.0.0.1 40000 8080\r\n", "127.0.0.2", ""},
	} {
		answer := raw(tc.from, tc.header)
		if !strings.HasPrefix(answer, "HTTP/1.1 200 ") {
			t.Errorf("%s: answer %.120q, want 200", tc.what, answer)
			continue
		}
		line := s.accessLine(t, requestID(answer))
		if line["remote_addr"] != tc.client || line["limit_req"] != tc.limit {
			t.Errorf("%s: logged client %v limit_req %q, want %s and %q", tc.what, line["remote_addr"], line["limit_req"], tc.client, tc.limit)
		}
	}
	if answer := raw("127.0.0.1", ""); answer != "" {
		t.Errorf("a request without the PROXY header: %.120q, want no answer", answer)
	}
}

// TestShippedClientLimitsAreSettings: the per-client limits and the body
// size come from the Supervisor's ClientLimits, not from nginx.conf: a
// rate of 1 with a burst of 1 answers a client's third request at once
// with 429 and its own RateLimit-Policy, another client is not counted,
// and a body over MaxBody gets 413.
func TestShippedClientLimitsAreSettings(t *testing.T) {
	s := startShipped(t, "127.0.0.1:%d", solver(nil, nil), func(sup *Supervisor) {
		sup.Config.RealIPFrom, _ = conf.ParsePrefixes([]string{"127.0.0.1"})
		sup.Config.Clients = conf.ClientLimits{Rate: 1, Burst: 1, InFlight: 8, BatchRate: 1, BatchBurst: 0, BatchInFlight: 1, BatchBodies: 2, MaxBody: 1024}
	})
	send := func(client, method, body string) *http.Response {
		req, _ := http.NewRequest(method, s.url("127.0.0.1", "/sudoku?puzzle=x"), strings.NewReader(body))
		req.Header.Set("X-Forwarded-For", client)
		resp, _ := s.do(t, "127.0.0.1", req)
		return resp
	}
	var statuses []int
	for range 3 {
		statuses = append(statuses, send("203.0.113.1", "GET", "").StatusCode)
	}
	if fmt.Sprint(statuses) != "[200 200 429]" {
		t.Fatalf("three GETs at once from one client at -client-rate 1 -client-burst 1: %v, want [200 200 429]", statuses)
	}
	resp := send("203.0.113.1", "GET", "")
	if p := resp.Header.Get("RateLimit-Policy"); p != `"client";q=1;w=1` {
		t.Errorf("RateLimit-Policy %q, want the rendered rate 1", p)
	}
	if resp := send("203.0.113.2", "GET", ""); resp.StatusCode != 200 {
		t.Errorf("another client: %d, want 200 (its own budget)", resp.StatusCode)
	}
	if resp := send("203.0.113.3", "POST", strings.Repeat("0", 1025)); resp.StatusCode != 413 {
		t.Errorf("a 1025-byte batch with -max-body 1024: %d, want 413", resp.StatusCode)
	}
}
