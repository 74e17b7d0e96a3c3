package fcgi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sudoku-fcgi/fcgi/fcgiserver"
	"sudoku-fcgi/fcgi/fcgitest"
	"sudoku-fcgi/solver"
)

// countingListener counts write(2)-level Writes on accepted connections.
type countingListener struct {
	net.Listener
	writes atomic.Int64
}

type countingConn struct {
	net.Conn
	l *countingListener
}

func (c countingConn) Write(p []byte) (int, error) {
	c.l.writes.Add(1)
	return c.Conn.Write(p)
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l}, nil
}

type testServer struct {
	s      *Service
	m      *fcgiserver.Metrics
	addr   string
	ln     *countingListener
	cancel context.CancelFunc
	done   chan error
}

// serviceOptions wires s into opt as cmd/sudoku-fcgi does.
func serviceOptions(s *Service, opt fcgiserver.Options) fcgiserver.Options {
	opt.OnDrain = func() { s.SetDraining(true) }
	if opt.Metrics == nil {
		opt.Metrics = fcgiserver.NewMetrics("sudoku")
	}
	return opt
}

// opts returns the default options changed by set.
func opts(set ...func(*fcgiserver.Options)) fcgiserver.Options {
	o := fcgiserver.DefaultOptions()
	for _, f := range set {
		f(&o)
	}
	return o
}

// startServer runs Serve for s on a loopback port until the test ends.
func startServer(t testing.TB, s *Service, opt fcgiserver.Options) *testServer {
	t.Helper()
	ln := fcgitest.Listen(t, "tcp", "127.0.0.1:0")
	cl := &countingListener{Listener: ln}
	ctx, cancel := context.WithCancel(context.Background())
	opt = serviceOptions(s, opt)
	ts := &testServer{s: s, m: opt.Metrics, addr: ln.Addr().String(), ln: cl, cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- fcgiserver.Serve(ctx, cl, s, opt) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ts.done:
		case <-time.After(15 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	})
	return ts
}

func (ts *testServer) stop(t *testing.T, within time.Duration) error {
	t.Helper()
	ts.cancel()
	select {
	case err := <-ts.done:
		ts.done <- err // for Cleanup
		return err
	case <-time.After(within):
		t.Fatalf("Serve did not return within %v", within)
		return nil
	}
}

func TestFastCGIKeepAlive(t *testing.T) {
	ts := startServer(t, newTestService(t, cfg()), opts())
	c := fcgitest.Dial(t, ts.addr)
	for i := range 5 {
		id := uint16(i%2 + 1)
		before := ts.ln.writes.Load()
		resp := c.Do(id, "GET", "/sudoku?puzzle="+easy+"&id=k", "example.com", nil)
		if resp.Status != 200 || !strings.Contains(string(resp.Body), solution) {
			t.Fatalf("request %d: %d %q", i, resp.Status, resp.Body)
		}
		if got := resp.Header.Get("X-Sudoku-Worker"); got != "test-1" {
			t.Errorf("X-Sudoku-Worker = %q", got)
		}
		if got := resp.Header.Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type = %q", got)
		}
		// header, body, end of stdout and FCGI_END_REQUEST leave in one write
		if w := ts.ln.writes.Load() - before; w != 1 {
			t.Errorf("request %d took %d writes, want 1 (coalesced)", i, w)
		}
	}
}

// HEAD through the FastCGI child: the GET's status and length, no body.
func TestFastCGIHead(t *testing.T) {
	ts := startServer(t, newTestService(t, cfg()), opts())
	c := fcgitest.Dial(t, ts.addr)
	get := c.Do(1, "GET", "/sudoku?puzzle="+easy, "h", nil)
	head := c.Do(1, "HEAD", "/sudoku?puzzle="+easy, "h", nil)
	if head.Status != 200 || len(head.Body) != 0 || head.Header.Get("Content-Length") != strconv.Itoa(len(get.Body)) {
		t.Errorf("HEAD = %d, body %q, Content-Length %q; want 200, none, %d", head.Status, head.Body, head.Header.Get("Content-Length"), len(get.Body))
	}
}

// net/http/fcgi answers 500 when cgi.RequestFromMap fails on a bad Host or
// URI; the worker turns that into a JSON 400.
func TestFastCGIMalformedRequest(t *testing.T) {
	s := newTestService(t, cfg())
	ts := startServer(t, s, opts())
	c := fcgitest.Dial(t, ts.addr)
	for i, host := range []string{"a%zz", "[::1", "x y%"} {
		resp := c.Do(uint16(i+1), "GET", "/sudoku?puzzle="+easy, host, nil)
		if resp.Status != 400 {
			t.Fatalf("Host %q: status %d %q, want 400", host, resp.Status, resp.Body)
		}
		var m map[string]string
		if err := json.Unmarshal(resp.Body, &m); err != nil || !strings.Contains(m["error"], "Host") {
			t.Errorf("Host %q: body %q (%v), want a JSON error naming the Host", host, resp.Body, err)
		}
		if resp.Header.Get("X-Sudoku-Worker") != "test-1" || len(resp.Stderr) != 0 {
			t.Errorf("Host %q: header %v stderr %q", host, resp.Header, resp.Stderr)
		}
	}
	// A bad CONTENT_LENGTH takes the same path.
	c.Send(fcgitest.Request(7, "GET", "/sudoku", "h", map[string]string{"CONTENT_LENGTH": "x"}, nil))
	if resp, err := c.Read(7); err != nil || resp.Status != 400 {
		t.Fatalf("bad CONTENT_LENGTH: %v %v", resp, err)
	}
	// The connection still serves good requests.
	if resp := c.Do(9, "GET", "/sudoku?puzzle="+easy, "ok", nil); resp.Status != 200 {
		t.Fatalf("after malformed requests: %d %q", resp.Status, resp.Body)
	}
	if got := s.counts.totals()["bad_request"]; got != 4 {
		t.Errorf("bad_request total = %d, want 4", got)
	}
}

func TestFastCGIBatchStreams(t *testing.T) {
	s := newTestService(t, cfg(func(c *Config) { c.PoolSize = 1; c.BatchParallel = 1 }))
	b := newBlockingSolve()
	s.solve = b.solve
	ts := startServer(t, s, opts())
	c := fcgitest.Dial(t, ts.addr)
	body := []byte("1:" + easy + "\n2:" + easy + "\n")
	c.Send(fcgitest.Request(1, "POST", "/sudoku", "h", nil, body))
	// The header arrives while the solves are still parked: streamed, not
	// held until the end of the request.
	c.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	typ, _, content, err := c.ReadRecord()
	if err != nil || typ != fcgitest.TypeStdout || !bytes.HasPrefix(content, []byte("Status: 200")) {
		t.Fatalf("first record = %d %q %v, want the 200 header", typ, content, err)
	}
	close(b.release)
	lines, err := c.ReadStdout()
	if err != nil {
		t.Fatal(err)
	}
	if want := "1:" + solution + "\n2:" + solution + "\n"; string(lines) != want &&
		string(lines) != "2:"+solution+"\n1:"+solution+"\n" {
		t.Errorf("streamed body = %q, want both ids solved", lines)
	}
}

func TestFastCGIBatchLarge(t *testing.T) {
	ts := startServer(t, newTestService(t, cfg()), opts())
	c := fcgitest.Dial(t, ts.addr)
	var body bytes.Buffer
	for range 2000 { // ~170 KB in, ~170 KB out: several records each way
		body.WriteString("id:" + easy + "\n")
	}
	resp := c.Do(1, "POST", "/sudoku", "h", body.Bytes())
	if resp.Status != 200 {
		t.Fatalf("batch: %d %q", resp.Status, resp.Body)
	}
	if n := strings.Count(string(resp.Body), "id:"+solution+"\n"); n != 2000 {
		t.Errorf("batch gave %d solved lines, want 2000", n)
	}
}

// Regression (reliability suite, client abort): nginx closes the FastCGI
// connection when its client aborts and sends no FCGI_ABORT_REQUEST, and
// net/http/fcgi never cancels r.Context(), so a batch kept solving every
// line with nobody to read the answers. The failed write must end it: the
// solves in flight stop and the lines not started never take a slot.
func TestFastCGIBatchClientGone(t *testing.T) {
	const solveTimeout = 300 * time.Millisecond
	s := newTestService(t, cfg(func(c *Config) { c.PoolSize = 2; c.BatchParallel = 2; c.SolveTimeout = solveTimeout }))
	f := &stallAfter{n: 4}
	s.solve = f.solve
	ts := startServer(t, s, opts())
	c := fcgitest.Dial(t, ts.addr)
	const lines = 1000
	var body bytes.Buffer
	for i := range lines {
		fmt.Fprintf(&body, "%d:%s\n", i, easy)
	}
	c.Send(fcgitest.Request(1, "POST", "/sudoku", "h", nil, body.Bytes()))
	c.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		typ, _, content, err := c.ReadRecord()
		if err != nil {
			t.Fatalf("reading the first answers: %v", err)
		}
		if typ == fcgitest.TypeStdout && bytes.Contains(content, []byte(":"+solution+"\n")) {
			break
		}
	}
	c.Conn.Close()
	closed := time.Now()

	limit := solveTimeout + 3*time.Second
	for s.counts.inFlight.Load() != 0 || s.pool.Busy() != 0 || s.pool.Waiting() != 0 {
		if time.Since(closed) > limit {
			t.Fatalf("%v after the client left: %d requests in flight, %d slots busy, %d waiting; %d of %d lines sent to the solver",
				limit, s.counts.inFlight.Load(), s.pool.Busy(), s.pool.Waiting(), f.calls.Load(), lines)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := f.calls.Load(); n > 20 {
		t.Errorf("%d of %d lines reached the solver after the client left early", n, lines)
	}
}

// Issue golang/go#81548: BEGIN_REQUEST records that never finish their
// input make net/http/fcgi keep state per request id forever.
func TestFastCGIRecordLimits(t *testing.T) {
	t.Run("pending requests", func(t *testing.T) {
		s := newTestService(t, cfg())
		ts := startServer(t, s, opts(func(o *fcgiserver.Options) { o.MaxPendingPerConn = 4 }))
		c := fcgitest.Dial(t, ts.addr)
		var b []byte
		for id := range uint16(1000) {
			b = append(b, fcgitest.BeginRequest(id+1, true)...)
		}
		c.Conn.Write(b) // may fail once the worker hangs up
		expectClosed(t, c)
	})
	t.Run("params bytes", func(t *testing.T) {
		ts := startServer(t, newTestService(t, cfg()), opts(func(o *fcgiserver.Options) { o.MaxParamsBytes = 4096 }))
		c := fcgitest.Dial(t, ts.addr)
		b := fcgitest.BeginRequest(1, true)
		for range 10 {
			b = append(b, fcgitest.Record(fcgitest.TypeParams, 1, make([]byte, 1000))...)
		}
		c.Conn.Write(b)
		expectClosed(t, c)
	})
	t.Run("within limits", func(t *testing.T) {
		ts := startServer(t, newTestService(t, cfg()), opts(func(o *fcgiserver.Options) { o.MaxPendingPerConn = 2 }))
		c := fcgitest.Dial(t, ts.addr)
		// Two requests multiplexed on one connection are fine.
		c.Send(append(fcgitest.Request(1, "GET", "/sudoku?puzzle="+easy, "h", nil, nil),
			fcgitest.Request(2, "GET", "/sudoku?puzzle="+easy, "h", nil, nil)...))
		seen := map[uint16]bool{}
		c.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		for len(seen) < 2 {
			typ, id, _, err := c.ReadRecord()
			if err != nil {
				t.Fatalf("reading: %v", err)
			}
			if typ == fcgitest.TypeEndRequest {
				seen[id] = true
			}
		}
	})
}

func expectClosed(t *testing.T, c *fcgitest.Client) {
	t.Helper()
	if !c.ClosedByPeer(5 * time.Second) {
		t.Fatal("connection still open, want the worker to close it")
	}
}

// serveTwo starts a server with opt and opens two connections, each
// answered once; it returns the server and the first connection.
func serveTwo(t *testing.T, opt fcgiserver.Options) (*testServer, *fcgitest.Client) {
	t.Helper()
	ts := startServer(t, newTestService(t, cfg()), opt)
	a := fcgitest.Dial(t, ts.addr)
	for _, c := range []*fcgitest.Client{a, fcgitest.Dial(t, ts.addr)} {
		if r := c.Do(1, "GET", "/sudoku?puzzle="+easy, "h", nil); r.Status != 200 {
			t.Fatalf("GET: status %d %q", r.Status, r.Body)
		}
	}
	return ts, a
}

func TestFastCGIConnLimit(t *testing.T) {
	ts, a := serveTwo(t, opts(func(o *fcgiserver.Options) { o.MaxConns = 2; o.MaxConnsPerPeer = 2 }))
	// A third connection completes in the kernel backlog but is not
	// accepted, so its request waits.
	c := fcgitest.Dial(t, ts.addr)
	c.Send(fcgitest.Request(1, "GET", "/sudoku?puzzle="+easy, "h", nil, nil))
	got := make(chan *fcgitest.Response, 1)
	go func() {
		r, _ := c.Read(1)
		got <- r
	}()
	select {
	case r := <-got:
		t.Fatalf("third connection served above the limit: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	if n := ts.m.Open(); n != 2 {
		t.Errorf("open connections = %d, want 2", n)
	}
	a.Conn.Close() // frees a place: the third is accepted and answered
	select {
	case r := <-got:
		if r == nil || r.Status != 200 {
			t.Fatalf("third connection after a close: %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("third connection not served after a place freed")
	}
}

func TestFastCGIConnLimitPerPeer(t *testing.T) {
	ts, a := serveTwo(t, opts(func(o *fcgiserver.Options) { o.MaxConns = 8; o.MaxConnsPerPeer = 2 }))
	// A third connection from the same address is closed on accept, not
	// left in the backlog where it would hold up everyone behind it.
	expectClosed(t, fcgitest.Dial(t, ts.addr))
	// Another address (all of 127/8 is loopback on Linux) is still served.
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	conn, err := d.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatalf("dial from 127.0.0.2: %v", err)
	}
	other := fcgitest.NewClient(t, conn)
	if r := other.Do(1, "GET", "/sudoku?puzzle="+easy, "h", nil); r.Status != 200 {
		t.Fatalf("another peer: status %d %q", r.Status, r.Body)
	}
	// Closing one frees a place for the first address again.
	a.Conn.Close()
	expectServedSoon(t, func() *fcgitest.Client { return fcgitest.Dial(t, ts.addr) })
}

// expectServedSoon dials until a connection's GET is answered 200, within
// 5 seconds: after a close the server may refuse a new connection until
// it has seen the close.
func expectServedSoon(t *testing.T, dial func() *fcgitest.Client) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := dial()
		r, err := c.Try(1, "/sudoku?puzzle="+easy, "h", 2*time.Second)
		c.Conn.Close()
		if err == nil && r.Status == 200 {
			return
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("status %d %q", r.Status, r.Body)
			}
			t.Fatalf("no connection served within 5s after one closed (last: %v)", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFastCGIPanic(t *testing.T) {
	s := newTestService(t, cfg())
	s.solve = func(context.Context, solver.Grid, int) (solver.Result, error) { panic("boom") }
	ts := startServer(t, s, opts())
	c := fcgitest.Dial(t, ts.addr)
	resp := c.Do(1, "GET", "/sudoku?puzzle="+easy, "h", nil)
	if resp.Status != 500 || !json.Valid(resp.Body) {
		t.Fatalf("panicking handler: %d %q, want a JSON 500", resp.Status, resp.Body)
	}
	s.solve = solver.SolveContext
	if resp := c.Do(1, "GET", "/sudoku?puzzle="+easy, "h", nil); resp.Status != 200 {
		t.Fatalf("after the panic, same connection: %d %q", resp.Status, resp.Body)
	}
}

func TestDrain(t *testing.T) {
	s := newTestService(t, cfg(func(c *Config) { c.PoolSize = 2 }))
	b := newBlockingSolve()
	s.solve = b.solve
	ts := startServer(t, s, opts(func(o *fcgiserver.Options) { o.DrainTimeout = 10 * time.Second }))
	idle := fcgitest.Dial(t, ts.addr)
	idle.Do(1, "GET", "/sudoku/stats", "h", nil) // a served, now idle keep-alive conn
	busy := fcgitest.Dial(t, ts.addr)
	busy.Send(fcgitest.Request(1, "GET", "/sudoku?puzzle="+easy, "h", nil, nil))
	<-b.started

	ts.cancel()
	// The idle connection is closed, new connections are refused and
	// /readyz fails, while the in-flight request is still parked.
	expectClosed(t, idle)
	if !s.draining.Load() {
		t.Error("not draining after cancel")
	}
	if c, err := net.DialTimeout("tcp", ts.addr, time.Second); err == nil {
		c.Close()
		t.Error("new connection accepted while draining")
	}
	select {
	case err := <-ts.done:
		t.Fatalf("Serve returned %v with a request in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(b.release)
	resp, err := busy.Read(1)
	if err != nil || resp.Status != 200 {
		t.Fatalf("in-flight request during drain: %+v %v, want 200", resp, err)
	}
	expectClosed(t, busy) // closed after its last answer
	select {
	case err := <-ts.done:
		ts.done <- err
		if err != nil {
			t.Fatalf("Serve after drain = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the drain")
	}
}

func TestDrainTimeout(t *testing.T) {
	s := newTestService(t, cfg(func(c *Config) { c.SolveTimeout = time.Minute }))
	b := newBlockingSolve()
	s.solve = b.solve
	ts := startServer(t, s, opts(func(o *fcgiserver.Options) { o.DrainTimeout = 100 * time.Millisecond }))
	c := fcgitest.Dial(t, ts.addr)
	c.Send(fcgitest.Request(1, "GET", "/sudoku?puzzle="+easy, "h", nil, nil))
	<-b.started
	start := time.Now()
	err := ts.stop(t, 5*time.Second)
	if !errors.Is(err, fcgiserver.ErrDrainTimeout) {
		t.Fatalf("Serve = %v, want ErrDrainTimeout", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("drain timeout of 100ms took %v", took)
	}
	expectClosed(t, c)
	close(b.release)
}

// A request that arrives on a kept-alive connection while draining gets a
// 503 rather than being lost.
func TestDrainNewRequestOnOpenConn(t *testing.T) {
	s := newTestService(t, cfg(func(c *Config) { c.PoolSize = 2 }))
	b := newBlockingSolve()
	s.solve = b.solve
	ts := startServer(t, s, opts())
	c := fcgitest.Dial(t, ts.addr)
	c.Send(fcgitest.Request(1, "GET", "/sudoku?puzzle="+easy, "h", nil, nil))
	<-b.started
	ts.cancel()
	for !s.draining.Load() {
		time.Sleep(time.Millisecond)
	}
	c.Send(fcgitest.Request(2, "GET", "/sudoku?puzzle="+easy, "h", nil, nil))
	got := map[uint16]int{}
	var stdout = map[uint16][]byte{}
	c.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	released := false
	for len(got) < 2 {
		typ, id, content, err := c.ReadRecord()
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		switch typ {
		case fcgitest.TypeStdout:
			stdout[id] = append(stdout[id], content...)
		case fcgitest.TypeEndRequest:
			r := &fcgitest.Response{}
			if err := fcgitest.ParseCGI(stdout[id], r); err != nil {
				t.Fatal(err)
			}
			got[id] = r.Status
			if !released {
				released = true
				close(b.release)
			}
		}
	}
	if got[1] != 200 || got[2] != 503 {
		t.Errorf("statuses = %v, want 1:200 (in flight) 2:503 (arrived while draining)", got)
	}
}

// A request that reaches the handler once the drain has begun, on a
// connection with no other request (nginx's one request per connection),
// is not answered: the connection closes, which nginx retries on another
// worker, where a 503 would be final.
func TestDrainClosesConnOfLateRequest(t *testing.T) {
	s := newTestService(t, cfg())
	ln := fcgitest.Listen(t, "tcp", "127.0.0.1:0")
	entered, proceed := make(chan struct{}), make(chan struct{})
	opt := serviceOptions(s, opts())
	opt.OnDrain = func() { close(entered); <-proceed; s.SetDraining(true) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fcgiserver.Serve(ctx, ln, s, opt) }()
	defer func() { <-done }()
	defer close(proceed)
	defer cancel()

	c := fcgitest.Dial(t, ln.Addr().String())
	if r := c.Do(1, "GET", "/sudoku?puzzle="+easy, "h", nil); r.Status != 200 {
		t.Fatalf("before the drain: status %d, want 200", r.Status)
	}
	cancel()
	<-entered // the drain has begun; the idle connection is not closed yet
	c.Send(fcgitest.Request(2, "GET", "/sudoku?puzzle="+easy, "h", nil, nil))
	c.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if typ, id, _, err := c.ReadRecord(); err == nil {
		t.Fatalf("got record type %d for request %d, want the connection closed unanswered", typ, id)
	}
}

// With Linger, Serve returns no sooner than Linger after ctx ends, and
// refuses new connections all that time.
func TestDrainLinger(t *testing.T) {
	const linger = 300 * time.Millisecond
	s := newTestService(t, cfg())
	ts := startServer(t, s, opts(func(o *fcgiserver.Options) { o.Linger = linger }))
	fcgitest.Dial(t, ts.addr).Do(1, "GET", "/sudoku/stats", "h", nil)
	start := time.Now()
	ts.cancel()
	time.Sleep(linger / 3)
	if c, err := net.DialTimeout("tcp", ts.addr, time.Second); err == nil {
		c.Close()
		t.Error("connection accepted while lingering")
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial while lingering: %v, want connection refused", err)
	}
	if err := ts.stop(t, 5*time.Second); err != nil {
		t.Fatalf("Serve = %v, want nil", err)
	}
	if took := time.Since(start); took < linger {
		t.Errorf("Serve returned %v after cancel, before the %v linger", took, linger)
	}
}
