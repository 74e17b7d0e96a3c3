package fcgiserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	stdfcgi "net/http/fcgi"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Options bound what Serve may hold and say whom it tells what happens.
// DefaultOptions gives the defaults; a zero field means zero (which Serve
// refuses where it makes no sense) except where its comment says otherwise.
type Options struct {
	// MaxConns is the most open FastCGI connections; above it Serve
	// stops accepting (the kernel backlog holds the rest), like nginx's
	// accept_disabled. Each open connection costs about 70 KiB (the
	// standard library's 64 KiB record buffer and the 4 KiB reader), so
	// this bounds the memory a connection flood can take.
	MaxConns int
	// MaxConnsPerPeer is the most open connections from one peer, a
	// remote TCP address or, over a unix socket, a user id (Linux); a
	// connection past it is closed as soon as it is accepted, so that one
	// peer (a broken or hostile client on the network or with access to
	// the socket) cannot hold every connection while the web server's
	// wait in the backlog behind it. 0 means MaxConns/2, which leaves
	// room for every connection an nginx opens to one worker: its
	// max_conns busy ones plus the idle keepalive ones of each of its
	// worker processes (tests/bench/RESULTS.md).
	MaxConnsPerPeer int
	// DrainTimeout bounds the graceful drain after ctx ends.
	DrainTimeout time.Duration
	// Linger is how long after ctx ends Serve returns at the earliest,
	// once drained: the listener is closed all that time, so new
	// connections are refused at once, and a load balancer that watches
	// for that (sudoku-edge) takes the server out before its address
	// vanishes with its process (connects to a vanished address hang
	// until nginx's connect timeout). DefaultOptions leaves it 0: Serve
	// returns as soon as it has drained.
	Linger time.Duration
	// MaxPendingPerConn is the most requests on one connection whose
	// input (params and stdin) is not complete yet. nginx sends one at a
	// time; a client that opens many without finishing them is cut off
	// (golang/go#81548).
	MaxPendingPerConn int
	// MaxActivePerConn is the most unanswered requests on one connection.
	// nginx never has more than one.
	MaxActivePerConn int
	// MaxParamsBytes bounds the FastCGI params of one request; a
	// connection whose request exceeds it is closed. It must admit the
	// largest request the web server accepts (see DefaultOptions).
	MaxParamsBytes int

	// Log gets Serve's own lines: listening, accept errors, connections
	// it closes, the drain. The zero Logger writes nothing.
	Log zerolog.Logger
	// OnDrain, when set, is called once when ctx ends, before the
	// listener closes, so that the handler refuses new requests.
	OnDrain func()
	// Metrics, when set, counts the connections and malformed requests.
	Metrics *Metrics
}

// defaultParamsBytes is DefaultOptions' MaxParamsBytes: what nginx with
// large_client_header_buffers 4 8k (nginx/nginx.conf) can send. Its
// request URI (at most 8 KiB) appears once with the shipped
// sudoku-fastcgi.conf (REQUEST_URI), up to three times with Debian's
// fastcgi_params (SCRIPT_NAME and DOCUMENT_URI for a long path, or
// QUERY_STRING for a long query), and its header lines (at most 32 KiB together) grow when
// they become params: a 3-byte line "a:\n" becomes the 8 bytes of the pair
// HTTP_A="" (two length bytes, the HTTP_ prefix), 8/3 of its size. So 24
// KiB + 86 KiB + the fixed params stay below 128 KiB. nginx's
// TestSharedLimits checks it against the rendered nginx.conf.
const defaultParamsBytes = 128 << 10

// DefaultOptions returns the options Serve is meant to run with.
func DefaultOptions() Options {
	return Options{
		MaxConns:          1024,
		DrainTimeout:      10 * time.Second,
		MaxPendingPerConn: 2,
		MaxActivePerConn:  8,
		MaxParamsBytes:    defaultParamsBytes,
	}
}

// A closeReason says why a FastCGI connection ended.
type closeReason uint8

const (
	// closeNormal: the web server closed it, it failed, or Serve stopped.
	closeNormal closeReason = iota
	// closeLimit: it broke a per-connection record limit.
	closeLimit
	// closeDrain: the drain closed it, idle or after its last answer.
	closeDrain
	// closeRefused: its peer already had MaxConnsPerPeer open.
	closeRefused
)

// check refuses options Serve cannot run with and resolves MaxConnsPerPeer
// 0 and a nil OnDrain and Metrics.
func (o Options) check() (Options, error) {
	if o.MaxConns < 1 || o.MaxConnsPerPeer < 0 || o.MaxPendingPerConn < 1 || o.MaxActivePerConn < 1 || o.MaxParamsBytes < 1 {
		return o, errors.New("fcgiserver: MaxConns, MaxPendingPerConn, MaxActivePerConn and MaxParamsBytes must be >= 1, MaxConnsPerPeer >= 0")
	}
	if o.DrainTimeout <= 0 || o.Linger < 0 {
		return o, errors.New("fcgiserver: DrainTimeout must be > 0, Linger >= 0")
	}
	if o.MaxConnsPerPeer == 0 {
		o.MaxConnsPerPeer = max(1, o.MaxConns/2)
	}
	if o.OnDrain == nil {
		o.OnDrain = func() {}
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics("")
	}
	return o, nil
}

// ErrDrainTimeout is returned by Serve when requests were still open at the
// end of the drain timeout.
var ErrDrainTimeout = errors.New("fcgiserver: drain timed out")

// Serve runs the standard library's FastCGI child (net/http/fcgi) for
// every connection accepted on ln, with h as the handler, until ctx ends;
// then it drains: OnDrain, the listener closes, idle connections are
// closed, and connections close as their last request is answered. It
// returns nil after a complete drain (and no sooner than opt.Linger after
// ctx ended), ErrDrainTimeout (after closing everything) when
// opt.DrainTimeout passed first, or the listener's error if accepting
// failed.
//
// Around the child it adds what the child lacks: a connection limit,
// bounded per-connection state, buffered reads, one write per answer, an
// http.Flusher whose Flush sends at once (for streamed answers), and a
// say for h over requests the child cannot parse (MalformedReason). h sees
// only http.Requests and http.ResponseWriters.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, opt Options) error {
	opt, err := opt.check()
	if err != nil {
		return err
	}
	cs := &connSet{
		opt: opt, h: h,
		peerLog: opt.Log.Sample(&zerolog.BurstSampler{Burst: 1, Period: time.Second}),
		conns:   make(map[*conn]struct{}), perPeer: make(map[peer]int), empty: make(chan struct{}),
	}
	l := &listener{Listener: ln, set: cs, sem: make(chan struct{}, opt.MaxConns), done: make(chan struct{})}
	errc := make(chan error, 1)
	go func() { errc <- l.serve() }()
	opt.Log.Info().Str("addr", ln.Addr().String()).Int("max_conns", opt.MaxConns).
		Int("max_conns_per_peer", opt.MaxConnsPerPeer).Msg("serving fastcgi")

	select {
	case err := <-errc:
		l.Close()
		cs.closeAll()
		return fmt.Errorf("serving fastcgi: %w", err)
	case <-ctx.Done():
	}
	start := time.Now()
	cs.leaving.Store(true)
	opt.OnDrain()
	l.Close()
	<-errc
	open := cs.drain()
	opt.Log.Info().Int("open_conns", open).Int("in_flight", cs.inFlight()).Msg("draining")
	t := time.NewTimer(opt.DrainTimeout)
	defer t.Stop()
	select {
	case <-cs.empty:
		opt.Log.Info().Dur("took", time.Since(start)).Msg("drained")
		if rest := opt.Linger - time.Since(start); rest > 0 {
			opt.Log.Info().Dur("for", rest).Msg("lingering with the listener closed")
			time.Sleep(rest)
		}
		return nil
	case <-t.C:
		inFlight := cs.inFlight()
		n := cs.closeAll()
		return fmt.Errorf("%w: closed %d connections with %d requests in flight", ErrDrainTimeout, n, inFlight)
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

// serve accepts connections until the listener fails or closes, and runs a
// net/http/fcgi child on each, with a handler that knows its connection.
// stdfcgi.Serve returns at its second Accept, which oneConn fails, and
// leaves the child serving on its own goroutine.
func (l *listener) serve() error {
	for {
		c, err := l.accept()
		if err != nil {
			return err
		}
		stdfcgi.Serve(&oneConn{c: c, addr: c.LocalAddr()}, connHandler{h: l.set.h, c: c})
	}
}

func (l *listener) accept() (*conn, error) {
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
		// Ride out the transient errors (EMFILE, ECONNABORTED) as
		// net/http does.
		backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
		l.set.opt.Log.Warn().Err(err).Dur("retry_in", backoff).Msg("accept failed")
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

// oneConn is a listener that yields one connection, then fails.
type oneConn struct {
	c    net.Conn
	addr net.Addr
}

func (l *oneConn) Accept() (net.Conn, error) {
	c := l.c
	if c == nil {
		return nil, net.ErrClosed
	}
	l.c = nil
	return c, nil
}

func (l *oneConn) Close() error   { return nil }
func (l *oneConn) Addr() net.Addr { return l.addr }

// connHandler runs h for the requests of one connection, with a
// ResponseWriter whose Flush sends what the connection holds.
type connHandler struct {
	h http.Handler
	c *conn
}

var flushWriters = sync.Pool{New: func() any { return new(flushWriter) }}

func (ch connHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if ch.c.set.leaving.Load() && ch.c.closeIfOnlyRequest() {
		// Draining, and this request came in on a connection nginx had
		// idle: close it unanswered. nginx takes that for an error and
		// retries the request on another worker at once, as it does for
		// a refused connect, without a 503 for it to read first.
		return
	}
	fw := flushWriters.Get().(*flushWriter)
	fw.ResponseWriter, fw.c = w, ch.c
	ch.h.ServeHTTP(fw, r)
	*fw = flushWriter{} // the handler has returned and holds no reference
	flushWriters.Put(fw)
}

// flushWriter is net/http/fcgi's ResponseWriter with a Flush that reaches
// the socket: the child's own Flush only hands a record to the
// connection, which holds it until the answer is complete.
type flushWriter struct {
	http.ResponseWriter
	c *conn
}

var _ http.Flusher = (*flushWriter)(nil)

// FlushError flushes the child's buffer and then the connection's, and
// reports a failed write (the web server closed the connection), which
// the child's Flush does not. http.ResponseController calls it.
func (w *flushWriter) FlushError() error {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	return w.c.send()
}

func (w *flushWriter) Flush() { w.FlushError() }

// Unwrap gives http.ResponseController the child's writer.
func (w *flushWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// connSet tracks open connections for the drain.
type connSet struct {
	opt Options
	h   http.Handler
	// peerLog samples the per-peer refusals: a flood would write a line
	// per connection attempt.
	peerLog zerolog.Logger

	// leaving is set when the drain starts, before OnDrain.
	leaving atomic.Bool

	mu       sync.Mutex
	conns    map[*conn]struct{}
	perPeer  map[peer]int // open connections by peer
	draining bool
	empty    chan struct{} // closed when draining and no conn is left
}

// add wraps and tracks c, or returns nil when its peer already holds
// MaxConnsPerPeer connections.
func (cs *connSet) add(c net.Conn, sem chan struct{}) *conn {
	p := peerOf(c)
	cs.mu.Lock()
	if p.valid() && cs.perPeer[p] >= cs.opt.MaxConnsPerPeer {
		cs.mu.Unlock()
		cs.opt.Metrics.closed(closeRefused)
		cs.peerLog.Warn().Stringer("remote", p).Int("max_conns_per_peer", cs.opt.MaxConnsPerPeer).
			Msg("closing fastcgi connection: too many from this address")
		return nil
	}
	wc := &conn{Conn: c, set: cs, sem: sem, r: bufio.NewReaderSize(c, readBufferSize), peer: p}
	cs.conns[wc] = struct{}{}
	if p.valid() {
		cs.perPeer[p]++
	}
	cs.mu.Unlock()
	cs.opt.Metrics.opened()
	return wc
}

func (cs *connSet) remove(c *conn, why closeReason) {
	cs.opt.Metrics.closed(why)
	cs.mu.Lock()
	delete(cs.conns, c)
	if c.peer.valid() {
		if cs.perPeer[c.peer]--; cs.perPeer[c.peer] <= 0 {
			delete(cs.perPeer, c.peer)
		}
	}
	if cs.draining && len(cs.conns) == 0 {
		close(cs.empty)
	}
	cs.mu.Unlock()
}

// list returns the open connections. A conn's lock is taken before the
// set's (closing removes the conn), so callers lock each conn only after
// list has returned.
func (cs *connSet) list() []*conn {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	list := make([]*conn, 0, len(cs.conns))
	for c := range cs.conns {
		list = append(list, c)
	}
	return list
}

// drain marks every connection as draining and closes the idle ones; the
// rest close after their last answer. It returns the connections left.
func (cs *connSet) drain() int {
	cs.mu.Lock()
	cs.draining = true
	if len(cs.conns) == 0 {
		close(cs.empty)
	}
	cs.mu.Unlock()
	for _, c := range cs.list() {
		c.startDrain()
	}
	return len(cs.list())
}

func (cs *connSet) closeAll() int {
	list := cs.list()
	for _, c := range list {
		c.Close()
	}
	return len(list)
}

// inFlight is the number of unanswered requests on all connections.
func (cs *connSet) inFlight() int {
	n := 0
	for _, c := range cs.list() {
		c.mu.Lock()
		n += len(c.active)
		c.mu.Unlock()
	}
	return n
}
