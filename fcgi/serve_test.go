package fcgi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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
	addr   string
	ln     *countingListener
	cancel context.CancelFunc
	done   chan error
}

func startServer(t *testing.T, s *Service, opt ServeOptions) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{s: s, addr: ln.Addr().String(), ln: cl, cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(ctx, cl, opt) }()
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

func startServerB(b *testing.B, s *Service) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, ServeOptions{}) }()
	b.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
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
	ts := startServer(t, newTestService(t, Config{}), ServeOptions{})
	c := dialFCGI(t, ts.addr)
	for i := range 5 {
		id := uint16(i%2 + 1)
		before := ts.ln.writes.Load()
		resp := c.do(id, "GET", "/sudoku?puzzle="+easy+"&id=k", "example.com", nil)
		if resp.status != 200 || !strings.Contains(string(resp.body), solution) {
			t.Fatalf("request %d: %d %q", i, resp.status, resp.body)
		}
		if got := resp.header.Get("X-Sudoku-Worker"); got != "test-1" {
			t.Errorf("X-Sudoku-Worker = %q", got)
		}
		if got := resp.header.Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type = %q", got)
		}
		// header, body, end of stdout and FCGI_END_REQUEST leave in one write
		if w := ts.ln.writes.Load() - before; w != 1 {
			t.Errorf("request %d took %d writes, want 1 (coalesced)", i, w)
		}
	}
}

// net/http/fcgi answers 500 when cgi.RequestFromMap fails on a bad Host or
// URI; the worker turns that into a JSON 400.
func TestFastCGIMalformedRequest(t *testing.T) {
	s := newTestService(t, Config{})
	ts := startServer(t, s, ServeOptions{})
	c := dialFCGI(t, ts.addr)
	for i, host := range []string{"a%zz", "[::1", "x y%"} {
		resp := c.do(uint16(i+1), "GET", "/sudoku?puzzle="+easy, host, nil)
		if resp.status != 400 {
			t.Fatalf("Host %q: status %d %q, want 400", host, resp.status, resp.body)
		}
		var m map[string]string
		if err := json.Unmarshal(resp.body, &m); err != nil || !strings.Contains(m["error"], "Host") {
			t.Errorf("Host %q: body %q (%v), want a JSON error naming the Host", host, resp.body, err)
		}
		if resp.header.Get("X-Sudoku-Worker") != "test-1" || len(resp.stderr) != 0 {
			t.Errorf("Host %q: header %v stderr %q", host, resp.header, resp.stderr)
		}
	}
	// A bad CONTENT_LENGTH takes the same path.
	c.send(requestBytes(7, "GET", "/sudoku", "h", map[string]string{"CONTENT_LENGTH": "x"}, nil))
	if resp, err := c.read(7); err != nil || resp.status != 400 {
		t.Fatalf("bad CONTENT_LENGTH: %v %v", resp, err)
	}
	// The connection still serves good requests.
	if resp := c.do(9, "GET", "/sudoku?puzzle="+easy, "ok", nil); resp.status != 200 {
		t.Fatalf("after malformed requests: %d %q", resp.status, resp.body)
	}
	if got := s.stats.Snapshot(time.Now()).Totals["bad_request"]; got != 4 {
		t.Errorf("bad_request total = %d, want 4", got)
	}
}

func TestFastCGIBatchStreams(t *testing.T) {
	s := newTestService(t, Config{PoolSize: 1, BatchParallel: 1})
	b := newBlockingSolve()
	s.solve = b.solve
	ts := startServer(t, s, ServeOptions{})
	c := dialFCGI(t, ts.addr)
	body := []byte("1:" + easy + "\n2:" + easy + "\n")
	c.send(requestBytes(1, "POST", "/sudoku", "h", nil, body))
	// The header arrives while the solves are still parked: streamed, not
	// held until the end of the request.
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	typ, _, content, err := c.readRecord()
	if err != nil || typ != recStdout || !bytes.HasPrefix(content, []byte("Status: 200")) {
		t.Fatalf("first record = %d %q %v, want the 200 header", typ, content, err)
	}
	close(b.release)
	var lines []byte
	for {
		typ, _, content, err := c.readRecord()
		if err != nil {
			t.Fatal(err)
		}
		if typ == recEndRequest {
			break
		}
		lines = append(lines, content...)
	}
	if want := "1:" + solution + "\n2:" + solution + "\n"; string(lines) != want &&
		string(lines) != "2:"+solution+"\n1:"+solution+"\n" {
		t.Errorf("streamed body = %q, want both ids solved", lines)
	}
}

func TestFastCGIBatchLarge(t *testing.T) {
	ts := startServer(t, newTestService(t, Config{}), ServeOptions{})
	c := dialFCGI(t, ts.addr)
	var body bytes.Buffer
	for range 2000 { // ~170 KB in, ~170 KB out: several records each way
		body.WriteString("id:" + easy + "\n")
	}
	resp := c.do(1, "POST", "/sudoku", "h", body.Bytes())
	if resp.status != 200 {
		t.Fatalf("batch: %d %q", resp.status, resp.body)
	}
	if n := strings.Count(string(resp.body), "id:"+solution+"\n"); n != 2000 {
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
	s := newTestService(t, Config{PoolSize: 2, BatchParallel: 2, SolveTimeout: solveTimeout})
	f := &stallAfter{n: 4}
	s.solve = f.solve
	ts := startServer(t, s, ServeOptions{})
	c := dialFCGI(t, ts.addr)
	const lines = 1000
	var body bytes.Buffer
	for i := range lines {
		fmt.Fprintf(&body, "%d:%s\n", i, easy)
	}
	c.send(requestBytes(1, "POST", "/sudoku", "h", nil, body.Bytes()))
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		typ, _, content, err := c.readRecord()
		if err != nil {
			t.Fatalf("reading the first answers: %v", err)
		}
		if typ == recStdout && bytes.Contains(content, []byte(":"+solution+"\n")) {
			break
		}
	}
	c.conn.Close()
	closed := time.Now()

	limit := solveTimeout + 3*time.Second
	for s.inFlight.Load() != 0 || s.pool.Busy() != 0 || s.pool.Waiting() != 0 {
		if time.Since(closed) > limit {
			t.Fatalf("%v after the client left: %d requests in flight, %d slots busy, %d waiting; %d of %d lines sent to the solver",
				limit, s.inFlight.Load(), s.pool.Busy(), s.pool.Waiting(), f.calls.Load(), lines)
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
		s := newTestService(t, Config{})
		ts := startServer(t, s, ServeOptions{MaxPendingPerConn: 4})
		c := dialFCGI(t, ts.addr)
		var b []byte
		for id := range uint16(1000) {
			b = append(b, beginRecord(id+1, true)...)
		}
		c.conn.Write(b) // may fail once the worker hangs up
		expectClosed(t, c)
	})
	t.Run("params bytes", func(t *testing.T) {
		ts := startServer(t, newTestService(t, Config{}), ServeOptions{MaxParamsBytes: 4096})
		c := dialFCGI(t, ts.addr)
		b := beginRecord(1, true)
		for range 10 {
			b = append(b, record(recParams, 1, make([]byte, 1000))...)
		}
		c.conn.Write(b)
		expectClosed(t, c)
	})
	t.Run("within limits", func(t *testing.T) {
		ts := startServer(t, newTestService(t, Config{}), ServeOptions{MaxPendingPerConn: 2})
		c := dialFCGI(t, ts.addr)
		// Two requests multiplexed on one connection are fine.
		c.send(append(requestBytes(1, "GET", "/sudoku?puzzle="+easy, "h", nil, nil),
			requestBytes(2, "GET", "/sudoku?puzzle="+easy, "h", nil, nil)...))
		seen := map[uint16]bool{}
		c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		for len(seen) < 2 {
			typ, id, _, err := c.readRecord()
			if err != nil {
				t.Fatalf("reading: %v", err)
			}
			if typ == recEndRequest {
				seen[id] = true
			}
		}
	})
}

func expectClosed(t *testing.T, c *fcgiClient) {
	t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c.conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("connection still open, want the worker to close it")
	}
}

func TestFastCGIConnLimit(t *testing.T) {
	ts := startServer(t, newTestService(t, Config{}), ServeOptions{MaxConns: 2, MaxConnsPerPeer: 2})
	a, b := dialFCGI(t, ts.addr), dialFCGI(t, ts.addr)
	a.do(1, "GET", "/sudoku?puzzle="+easy, "h", nil)
	b.do(1, "GET", "/sudoku?puzzle="+easy, "h", nil)
	// A third connection completes in the kernel backlog but is not
	// accepted, so its request waits.
	c := dialFCGI(t, ts.addr)
	c.send(requestBytes(1, "GET", "/sudoku?puzzle="+easy, "h", nil, nil))
	got := make(chan *fcgiResponse, 1)
	go func() {
		r, _ := c.read(1)
		got <- r
	}()
	select {
	case r := <-got:
		t.Fatalf("third connection served above the limit: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	if n := ts.s.conns.Load(); n != 2 {
		t.Errorf("open connections = %d, want 2", n)
	}
	a.conn.Close() // frees a place: the third is accepted and answered
	select {
	case r := <-got:
		if r == nil || r.status != 200 {
			t.Fatalf("third connection after a close: %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("third connection not served after a place freed")
	}
}

func TestFastCGIConnLimitPerPeer(t *testing.T) {
	ts := startServer(t, newTestService(t, Config{}), ServeOptions{MaxConns: 8, MaxConnsPerPeer: 2})
	a, b := dialFCGI(t, ts.addr), dialFCGI(t, ts.addr)
	a.do(1, "GET", "/sudoku?puzzle="+easy, "h", nil)
	b.do(1, "GET", "/sudoku?puzzle="+easy, "h", nil)
	// A third connection from the same address is closed on accept, not
	// left in the backlog where it would hold up everyone behind it.
	expectClosed(t, dialFCGI(t, ts.addr))
	// Another address (all of 127/8 is loopback on Linux) is still served.
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	conn, err := d.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatalf("dial from 127.0.0.2: %v", err)
	}
	other := &fcgiClient{t: t, conn: conn, r: bufio.NewReader(conn)}
	t.Cleanup(func() { conn.Close() })
	if r := other.do(1, "GET", "/sudoku?puzzle="+easy, "h", nil); r.status != 200 {
		t.Fatalf("another peer: status %d %q", r.status, r.body)
	}
	// Closing one frees a place for the first address again.
	a.conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := dialFCGI(t, ts.addr)
		c.conn.SetDeadline(time.Now().Add(2 * time.Second))
		c.send(requestBytes(1, "GET", "/sudoku?puzzle="+easy, "h", nil, nil))
		if r, err := c.read(1); err == nil && r.status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection from the first address served after one of its two closed")
		}
		time.Sleep(10 * time.Millisecond) // the close may not be seen yet
	}
}

func TestFastCGIPanic(t *testing.T) {
	s := newTestService(t, Config{})
	s.solve = func(context.Context, solver.Grid, int) (solver.Result, error) { panic("boom") }
	ts := startServer(t, s, ServeOptions{})
	c := dialFCGI(t, ts.addr)
	resp := c.do(1, "GET", "/sudoku?puzzle="+easy, "h", nil)
	if resp.status != 500 || !json.Valid(resp.body) {
		t.Fatalf("panicking handler: %d %q, want a JSON 500", resp.status, resp.body)
	}
	s.solve = solver.SolveContext
	if resp := c.do(1, "GET", "/sudoku?puzzle="+easy, "h", nil); resp.status != 200 {
		t.Fatalf("after the panic, same connection: %d %q", resp.status, resp.body)
	}
}

func TestDrain(t *testing.T) {
	s := newTestService(t, Config{PoolSize: 2})
	b := newBlockingSolve()
	s.solve = b.solve
	ts := startServer(t, s, ServeOptions{DrainTimeout: 10 * time.Second})
	idle := dialFCGI(t, ts.addr)
	idle.do(1, "GET", "/sudoku/stats", "h", nil) // a served, now idle keep-alive conn
	busy := dialFCGI(t, ts.addr)
	busy.send(requestBytes(1, "GET", "/sudoku?puzzle="+easy, "h", nil, nil))
	<-b.started

	ts.cancel()
	// The idle connection is closed, new connections are refused and
	// /readyz fails, while the in-flight request is still parked.
	expectClosed(t, idle)
	if !s.Draining() {
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
	resp, err := busy.read(1)
	if err != nil || resp.status != 200 {
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
	s := newTestService(t, Config{SolveTimeout: time.Minute})
	b := newBlockingSolve()
	s.solve = b.solve
	ts := startServer(t, s, ServeOptions{DrainTimeout: 100 * time.Millisecond})
	c := dialFCGI(t, ts.addr)
	c.send(requestBytes(1, "GET", "/sudoku?puzzle="+easy, "h", nil, nil))
	<-b.started
	start := time.Now()
	err := ts.stop(t, 5*time.Second)
	if !errors.Is(err, ErrDrainTimeout) {
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
	s := newTestService(t, Config{PoolSize: 2})
	b := newBlockingSolve()
	s.solve = b.solve
	ts := startServer(t, s, ServeOptions{})
	c := dialFCGI(t, ts.addr)
	c.send(requestBytes(1, "GET", "/sudoku?puzzle="+easy, "h", nil, nil))
	<-b.started
	ts.cancel()
	for !s.Draining() {
		time.Sleep(time.Millisecond)
	}
	c.send(requestBytes(2, "GET", "/sudoku?puzzle="+easy, "h", nil, nil))
	got := map[uint16]int{}
	var stdout = map[uint16][]byte{}
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	released := false
	for len(got) < 2 {
		typ, id, content, err := c.readRecord()
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		switch typ {
		case recStdout:
			stdout[id] = append(stdout[id], content...)
		case recEndRequest:
			r := &fcgiResponse{}
			if err := parseCGI(stdout[id], r); err != nil {
				t.Fatal(err)
			}
			got[id] = r.status
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

// With Linger, Serve returns no sooner than Linger after ctx ends, and
// refuses new connections all that time.
func TestDrainLinger(t *testing.T) {
	const linger = 300 * time.Millisecond
	s := newTestService(t, Config{})
	ts := startServer(t, s, ServeOptions{Linger: linger})
	dialFCGI(t, ts.addr).do(1, "GET", "/sudoku/stats", "h", nil)
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
