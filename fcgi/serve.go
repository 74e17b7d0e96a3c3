package fcgi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	stdfcgi "net/http/fcgi"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// ServeOptions bound what the FastCGI side may hold. Zero values take the
// defaults noted on each field.
type ServeOptions struct {
	// MaxConns is the most open FastCGI connections; above it the worker
	// stops accepting (the kernel backlog holds the rest), like nginx's
	// accept_disabled. Each open connection costs about 70 KiB (the
	// standard library's 64 KiB record buffer and the 4 KiB reader), so
	// this bounds the memory a connection flood can take. Default 1024.
	MaxConns int
	// MaxConnsPerPeer is the most open TCP connections from one remote
	// address; a connection past it is closed as soon as it is accepted,
	// so that one peer (a broken or hostile client on the worker's
	// network) cannot hold every connection while nginx's wait in the
	// backlog behind it. Unix socket peers are not counted. Default
	// MaxConns/2: 512 with the default MaxConns, as much as the stack's
	// nginx can open to one worker (max_conns=256 busy, plus up to 128
	// idle per nginx worker process, two of them on 2 cores). With more
	// nginx processes, raise -max-conns.
	MaxConnsPerPeer int
	// DrainTimeout bounds the graceful drain after ctx ends. Default 10s.
	DrainTimeout time.Duration
	// Linger is how long after ctx ends Serve returns at the earliest,
	// once drained: the listener is closed all that time, so new
	// connections are refused at once, and a load balancer that watches
	// for that (sudoku-edge) takes the worker out before its address
	// vanishes with its process (connects to a vanished address hang
	// until nginx's connect timeout). Default 0.
	Linger time.Duration
	// MaxPendingPerConn is the most requests on one connection whose
	// input (params and stdin) is not complete yet. nginx sends one at a
	// time; a client that opens many without finishing them is cut off
	// (golang/go#81548). Default 2.
	MaxPendingPerConn int
	// MaxActivePerConn is the most unanswered requests on one connection.
	// nginx never has more than one; default 8.
	MaxActivePerConn int
	// MaxParamsBytes bounds the FastCGI params of one request. nginx's
	// header buffers (4 x 8 KiB) keep real params well below it. Default
	// 32 KiB.
	MaxParamsBytes int
}

func (o ServeOptions) withDefaults() ServeOptions {
	if o.MaxConns <= 0 {
		o.MaxConns = 1024
	}
	if o.MaxConnsPerPeer <= 0 {
		o.MaxConnsPerPeer = max(1, o.MaxConns/2)
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 10 * time.Second
	}
	if o.MaxPendingPerConn <= 0 {
		o.MaxPendingPerConn = 2
	}
	if o.MaxActivePerConn <= 0 {
		o.MaxActivePerConn = 8
	}
	if o.MaxParamsBytes <= 0 {
		o.MaxParamsBytes = 32 << 10
	}
	return o
}

// ErrDrainTimeout is returned by Serve when requests were still open at the
// end of the drain timeout.
var ErrDrainTimeout = errors.New("fcgi: drain timed out")

// Serve runs the FastCGI child (net/http/fcgi) on ln with s as the handler
// until ctx ends, then drains: /readyz fails, new requests get 503, the
// listener closes, idle connections are closed, and connections close as
// their last request is answered. It returns nil after a complete drain
// (and no sooner than opt.Linger after ctx ended), ErrDrainTimeout (after
// closing everything) when opt.DrainTimeout passed first, or the
// listener's error if accepting failed.
func (s *Service) Serve(ctx context.Context, ln net.Listener, opt ServeOptions) error {
	opt = opt.withDefaults()
	cs := &connSet{s: s, opt: opt, conns: make(map[*conn]struct{}), perPeer: make(map[netip.Addr]int), empty: make(chan struct{})}
	l := &listener{Listener: ln, set: cs, sem: make(chan struct{}, opt.MaxConns), done: make(chan struct{})}
	errc := make(chan error, 1)
	go func() { errc <- stdfcgi.Serve(l, s) }()
	s.log.Info().Str("addr", ln.Addr().String()).Int("max_conns", opt.MaxConns).
		Int("pool", s.pool.Size()).Int("queue", s.pool.QueueCap()).Msg("serving fastcgi")

	select {
	case err := <-errc:
		l.Close()
		cs.closeAll()
		return fmt.Errorf("serving fastcgi: %w", err)
	case <-ctx.Done():
	}
	start := time.Now()
	s.SetDraining(true)
	l.Close()
	<-errc
	open := cs.drain()
	s.log.Info().Int("open_conns", open).Int64("in_flight", s.inFlight.Load()).Msg("draining")
	t := time.NewTimer(opt.DrainTimeout)
	defer t.Stop()
	select {
	case <-cs.empty:
		s.log.Info().Dur("took", time.Since(start)).Msg("drained")
		if rest := opt.Linger - time.Since(start); rest > 0 {
			s.log.Info().Dur("for", rest).Msg("lingering with the listener closed")
			time.Sleep(rest)
		}
		return nil
	case <-t.C:
		n := cs.closeAll()
		return fmt.Errorf("%w: closed %d connections with %d requests in flight", ErrDrainTimeout, n, s.inFlight.Load())
	}
}

// readBufferSize is each connection's read buffer: one read takes in a
// whole request from nginx (its params are about 1 KiB), and net/http/fcgi
// reads larger records (a batch's body) straight into its own buffer. It is
// live memory for every open connection, idle ones included.
const readBufferSize = 4 << 10

// listener limits open connections and wraps each one.
type listener struct {
	net.Listener
	set       *connSet
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *listener) Accept() (net.Conn, error) {
	var backoff time.Duration
	for {
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
		c, err := l.Listener.Accept()
		if err == nil {
			if wc := l.set.add(c, l.sem); wc != nil {
				return wc, nil
			}
			c.Close() // over MaxConnsPerPeer
			<-l.sem
			continue
		}
		<-l.sem
		select {
		case <-l.done:
			return nil, net.ErrClosed
		default:
		}
		if errors.Is(err, net.ErrClosed) {
			return nil, err
		}
		// net/http/fcgi.Serve gives up on any Accept error; ride out the
		// transient ones (EMFILE, ECONNABORTED) as net/http does.
		backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
		l.set.s.log.Warn().Err(err).Dur("retry_in", backoff).Msg("accept failed")
		time.Sleep(backoff)
	}
}

func (l *listener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.Listener.Close()
	})
	return err
}

// connSet tracks open connections for the drain.
type connSet struct {
	s   *Service
	opt ServeOptions

	mu       sync.Mutex
	conns    map[*conn]struct{}
	perPeer  map[netip.Addr]int // open TCP connections by remote address
	draining bool
	empty    chan struct{} // closed when draining and no conn is left
}

// add wraps and tracks c, or returns nil when its peer already holds
// MaxConnsPerPeer connections.
func (cs *connSet) add(c net.Conn, sem chan struct{}) *conn {
	var peer netip.Addr
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		peer = a.AddrPort().Addr().Unmap()
	}
	cs.mu.Lock()
	if peer.IsValid() && cs.perPeer[peer] >= cs.opt.MaxConnsPerPeer {
		cs.mu.Unlock()
		cs.s.m.closedPeer.Inc()
		cs.s.peerLog.Warn().Str("remote", peer.String()).Int("max_conns_per_peer", cs.opt.MaxConnsPerPeer).
			Msg("closing fastcgi connection: too many from this address")
		return nil
	}
	wc := &conn{Conn: c, set: cs, sem: sem, r: bufio.NewReaderSize(c, readBufferSize), peer: peer}
	cs.conns[wc] = struct{}{}
	if peer.IsValid() {
		cs.perPeer[peer]++
	}
	cs.mu.Unlock()
	cs.s.conns.Add(1)
	cs.s.m.conns.Inc()
	cs.s.m.connsTotal.Inc()
	return wc
}

func (cs *connSet) remove(c *conn) {
	cs.s.conns.Add(-1)
	cs.s.m.conns.Dec()
	cs.mu.Lock()
	delete(cs.conns, c)
	if c.peer.IsValid() {
		if cs.perPeer[c.peer]--; cs.perPeer[c.peer] <= 0 {
			delete(cs.perPeer, c.peer)
		}
	}
	if cs.draining && len(cs.conns) == 0 {
		close(cs.empty)
	}
	cs.mu.Unlock()
}

// drain marks every connection as draining and closes the idle ones; the
// rest close after their last answer. It returns the connections left.
func (cs *connSet) drain() int {
	cs.mu.Lock()
	cs.draining = true
	list := make([]*conn, 0, len(cs.conns))
	for c := range cs.conns {
		list = append(list, c)
	}
	if len(cs.conns) == 0 {
		close(cs.empty)
	}
	cs.mu.Unlock()
	for _, c := range list {
		c.startDrain()
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.conns)
}

func (cs *connSet) closeAll() int {
	cs.mu.Lock()
	list := make([]*conn, 0, len(cs.conns))
	for c := range cs.conns {
		list = append(list, c)
	}
	cs.mu.Unlock()
	for _, c := range list {
		c.Close()
	}
	return len(list)
}

// FastCGI record types (FastCGI 1.0 spec).
const (
	recBeginRequest = 1
	recAbortRequest = 2
	recEndRequest   = 3
	recParams       = 4
	recStdin        = 5
	recStdout       = 6
	recStderr       = 7
)

var errRecordLimit = errors.New("fcgi: connection exceeded its record limits")

type pending struct {
	id     uint16
	params int
}

// conn wraps one FastCGI connection. Reads go through a buffer and are
// scanned record by record to bound per-connection state and to know which
// requests are open. Writes (net/http/fcgi writes exactly one record per
// Write) are held until the request's FCGI_END_REQUEST and then sent in one
// write; a response that sets "X-Accel-Buffering: no" (a streamed batch) is
// written through instead. A request net/http/fcgi could not parse (it
// answers 500 with a "cgi: ..." line on stderr) is answered 400 instead.
// When the web server closes the connection, net/http/fcgi's read loop hits
// EOF and closes this conn; every later Write then fails with
// net.ErrClosed, and that failed write is how a streamed batch learns that
// its client is gone (nginx sends no FCGI_ABORT_REQUEST).
type conn struct {
	net.Conn
	set  *connSet
	sem  chan struct{}
	r    *bufio.Reader
	peer netip.Addr // remote TCP address; zero for unix sockets

	// read side, touched only by the reading goroutine
	hdr     [8]byte
	hdrN    int
	skip    int
	pending []pending

	mu        sync.Mutex
	wbuf      []byte
	active    []uint16
	streaming []uint16
	malformed []uint16
	draining  bool
	closed    bool
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		if serr := c.scan(p[:n]); serr != nil {
			c.set.s.m.closedLimit.Inc()
			c.set.s.log.Warn().Err(serr).Str("remote", c.RemoteAddr().String()).Msg("closing fastcgi connection")
			c.Close()
			return 0, serr
		}
	}
	return n, err
}

// scan follows the record boundaries in the bytes the child reads.
func (c *conn) scan(b []byte) error {
	for len(b) > 0 {
		if c.skip > 0 {
			k := min(len(b), c.skip)
			c.skip -= k
			b = b[k:]
			continue
		}
		k := copy(c.hdr[c.hdrN:], b)
		c.hdrN += k
		b = b[k:]
		if c.hdrN < len(c.hdr) {
			return nil
		}
		c.hdrN = 0
		typ := c.hdr[1]
		id := binary.BigEndian.Uint16(c.hdr[2:])
		clen := int(binary.BigEndian.Uint16(c.hdr[4:]))
		c.skip = clen + int(c.hdr[6])
		if err := c.record(typ, id, clen); err != nil {
			return err
		}
	}
	return nil
}

func (c *conn) findPending(id uint16) int {
	for i := range c.pending {
		if c.pending[i].id == id {
			return i
		}
	}
	return -1
}

func (c *conn) dropPending(i int) {
	c.pending[i] = c.pending[len(c.pending)-1]
	c.pending = c.pending[:len(c.pending)-1]
}

func (c *conn) record(typ uint8, id uint16, clen int) error {
	opt := &c.set.opt
	switch typ {
	case recBeginRequest:
		if c.findPending(id) >= 0 {
			return nil // the child rejects the duplicate itself
		}
		if len(c.pending) >= opt.MaxPendingPerConn {
			return fmt.Errorf("%w: over %d requests with incomplete input", errRecordLimit, opt.MaxPendingPerConn)
		}
		c.mu.Lock()
		if len(c.active) >= opt.MaxActivePerConn {
			c.mu.Unlock()
			return fmt.Errorf("%w: over %d unanswered requests", errRecordLimit, opt.MaxActivePerConn)
		}
		c.active = append(c.active, id)
		c.mu.Unlock()
		c.pending = append(c.pending, pending{id: id})
	case recAbortRequest:
		if i := c.findPending(id); i >= 0 {
			c.dropPending(i)
		}
	case recParams:
		if i := c.findPending(id); i >= 0 {
			c.pending[i].params += clen
			if c.pending[i].params > opt.MaxParamsBytes {
				return fmt.Errorf("%w: params over %d bytes", errRecordLimit, opt.MaxParamsBytes)
			}
		}
	case recStdin:
		if clen == 0 {
			if i := c.findPending(id); i >= 0 {
				c.dropPending(i)
			}
		}
	}
	return nil
}

func indexID(ids []uint16, id uint16) int {
	for i, v := range ids {
		if v == id {
			return i
		}
	}
	return -1
}

func removeID(ids []uint16, id uint16) []uint16 {
	if i := indexID(ids, id); i >= 0 {
		ids[i] = ids[len(ids)-1]
		return ids[:len(ids)-1]
	}
	return ids
}

var (
	cgiPrefix     = []byte("cgi: ")
	statusPrefix  = []byte("Status: ")
	noBufferingHd = []byte("\r\nX-Accel-Buffering: no\r\n")
)

const flushThreshold = 64 << 10

func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	if len(p) < 8 {
		c.wbuf = append(c.wbuf, p...)
		return len(p), nil
	}
	typ := p[1]
	id := binary.BigEndian.Uint16(p[2:])
	clen := int(binary.BigEndian.Uint16(p[4:]))
	content := p[8:min(8+clen, len(p))]
	switch {
	case typ == recStderr && bytes.HasPrefix(content, cgiPrefix):
		// net/http/fcgi could not build the request (cgi.RequestFromMap
		// failed) and is about to answer 500: answer 400 instead.
		c.malformed = append(c.malformed, id)
		c.set.s.malformedRequest(string(content))
		return len(p), nil
	case typ == recStdout && indexID(c.malformed, id) >= 0:
		if clen > 0 {
			return len(p), nil
		}
		c.wbuf = appendRecord(c.wbuf, recStdout, id, c.set.s.malformedResponse())
	case typ == recStdout && bytes.HasPrefix(content, statusPrefix) && bytes.Contains(content, noBufferingHd):
		c.streaming = append(c.streaming, id)
	}
	c.wbuf = append(c.wbuf, p...)
	flush := typ == recEndRequest || id == 0 || len(c.wbuf) >= flushThreshold ||
		(len(c.streaming) > 0 && indexID(c.streaming, id) >= 0)
	if typ == recEndRequest {
		c.active = removeID(c.active, id)
		c.streaming = removeID(c.streaming, id)
		c.malformed = removeID(c.malformed, id)
	}
	if flush {
		_, err := c.Conn.Write(c.wbuf)
		if cap(c.wbuf) > flushThreshold*2 {
			c.wbuf = nil
		} else {
			c.wbuf = c.wbuf[:0]
		}
		if err != nil {
			return 0, err
		}
	}
	if typ == recEndRequest && c.draining && len(c.active) == 0 {
		c.set.s.m.closedDrain.Inc()
		c.closeLocked()
	}
	return len(p), nil
}

// appendRecord appends one FastCGI record (content up to 65535 bytes).
func appendRecord(b []byte, typ uint8, id uint16, content []byte) []byte {
	pad := -len(content) & 7
	b = append(b, 1, typ, byte(id>>8), byte(id), byte(len(content)>>8), byte(len(content)), byte(pad), 0)
	b = append(b, content...)
	return append(b, make([]byte, pad)...)
}

func (c *conn) startDrain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draining = true
	if len(c.active) == 0 {
		c.set.s.m.closedDrain.Inc()
		c.closeLocked()
	}
}

func (c *conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeLocked()
}

func (c *conn) closeLocked() error {
	if c.closed {
		return nil
	}
	c.closed = true
	err := c.Conn.Close()
	// Forget the connection (and its peer's count) before its place in
	// the semaphore frees: the accept loop may take the place at once, and
	// must not see this peer still at its limit.
	c.set.remove(c)
	<-c.sem
	return err
}

// malformedRequest records a request the child could not parse.
func (s *Service) malformedRequest(detail string) {
	s.m.malformed.Inc()
	s.m.byOutcome[OutcomeBadRequest].Inc()
	s.stats.Record(OutcomeBadRequest, time.Now(), 0)
	if s.cfg.AccessLog {
		s.log.Info().Int("status", 400).Str("outcome", OutcomeBadRequest.String()).
			Str("error", detail).Msg("request")
	}
}

// malformedResponse is the CGI response (headers and body) for a request
// net/http/fcgi could not parse: a bad Host, request URI or length.
func (s *Service) malformedResponse() []byte {
	body := appendError(nil, "malformed request: invalid Host header, request URI or Content-Length", "")
	var b []byte
	b = append(b, "Status: 400 Bad Request\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nX-Sudoku-Worker: "...)
	b = append(b, s.cfg.WorkerID...)
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	return append(b, body...)
}
