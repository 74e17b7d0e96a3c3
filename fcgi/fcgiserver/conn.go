package fcgiserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
)

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

var errRecordLimit = errors.New("fcgiserver: connection exceeded its record limits")

type pending struct {
	id     uint16
	params int
}

// conn wraps one FastCGI connection. Reads go through a buffer and are
// scanned record by record to bound per-connection state and to know which
// requests are open. Writes (net/http/fcgi writes exactly one record per
// Write) are held until the request's FCGI_END_REQUEST and then sent in one
// write, or sooner when the handler flushes (flushWriter). A request
// net/http/fcgi could not parse (it answers 500 with a "cgi: ..." line on
// stderr) gets the handler's answer to a stand-in request instead
// (MalformedReason). When the web server closes
// the connection, net/http/fcgi's read loop hits EOF and closes this conn;
// every later Write or flush then fails with net.ErrClosed, and that
// failure is how a streamed batch learns that its client is gone (nginx
// sends no FCGI_ABORT_REQUEST).
type conn struct {
	net.Conn
	set  *connSet
	sem  chan struct{}
	r    *bufio.Reader
	peer peer // counted against MaxConnsPerPeer when valid

	// read side, touched only by the reading goroutine
	hdr     [8]byte
	hdrN    int
	skip    int
	pending []pending

	mu        sync.Mutex
	wbuf      []byte
	werr      error // the first failed write to the socket
	active    []uint16
	malformed []malformedAnswer
	draining  bool
	closed    bool
}

// malformedAnswer is the CGI answer (header and body) that replaces the
// child's 500 to the request id.
type malformedAnswer struct {
	id     uint16
	answer []byte
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		if serr := c.scan(p[:n]); serr != nil {
			c.set.opt.Log.Warn().Err(serr).Str("remote", c.RemoteAddr().String()).Msg("closing fastcgi connection")
			c.closeFor(closeLimit)
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
		if !c.closed { // a closed connection's requests are over
			c.active = append(c.active, id)
			opt.Metrics.requests(1)
		}
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

var cgiPrefix = []byte("cgi: ")

const flushThreshold = 64 << 10

func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	if c.werr != nil {
		return 0, c.werr
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
		// failed) and is about to answer 500: let the handler answer.
		c.malformed = append(c.malformed, malformedAnswer{id, c.set.malformedAnswer(string(content))})
		return len(p), nil
	case typ == recStdout:
		if i := c.findMalformed(id); i >= 0 {
			if clen > 0 {
				return len(p), nil // the child's 500
			}
			c.wbuf = appendStdout(c.wbuf, id, c.malformed[i].answer)
		}
	}
	c.wbuf = append(c.wbuf, p...)
	if typ == recEndRequest {
		n := len(c.active)
		if c.active = removeID(c.active, id); len(c.active) < n {
			c.set.opt.Metrics.requests(-1)
		}
		if i := c.findMalformed(id); i >= 0 {
			c.malformed = append(c.malformed[:i], c.malformed[i+1:]...)
		}
	}
	if typ == recEndRequest || id == 0 || len(c.wbuf) >= flushThreshold {
		if err := c.sendLocked(); err != nil {
			return 0, err
		}
	}
	if typ == recEndRequest && c.draining && len(c.active) == 0 {
		c.closeLocked(closeDrain)
	}
	return len(p), nil
}

func (c *conn) findMalformed(id uint16) int {
	for i := range c.malformed {
		if c.malformed[i].id == id {
			return i
		}
	}
	return -1
}

// send writes what the connection holds to the socket.
func (c *conn) send() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return net.ErrClosed
	}
	if c.werr != nil {
		return c.werr
	}
	return c.sendLocked()
}

func (c *conn) sendLocked() error {
	if len(c.wbuf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.wbuf)
	if cap(c.wbuf) > flushThreshold*2 {
		c.wbuf = nil
	} else {
		c.wbuf = c.wbuf[:0]
	}
	if err != nil {
		c.werr = err
	}
	return err
}

// appendStdout appends content as FCGI_STDOUT records of id.
func appendStdout(b []byte, id uint16, content []byte) []byte {
	for len(content) > 0 {
		n := min(len(content), 0xffff)
		pad := -n & 7
		b = append(b, 1, recStdout, byte(id>>8), byte(id), byte(n>>8), byte(n), byte(pad), 0)
		b = append(b, content[:n]...)
		b = append(b, make([]byte, pad)...)
		content = content[n:]
	}
	return b
}

func (c *conn) startDrain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draining = true
	if len(c.active) == 0 {
		c.closeLocked(closeDrain)
	}
}

// closeIfOnlyRequest closes the connection, unanswered, when its one
// unanswered request is the caller's, and reports whether it did. A
// connection with others (a client that multiplexes; nginx never does)
// stays open for their answers.
func (c *conn) closeIfOnlyRequest() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.active) != 1 {
		return false
	}
	c.closeLocked(closeDrain)
	return true
}

func (c *conn) Close() error { return c.closeFor(closeNormal) }

func (c *conn) closeFor(why closeReason) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeLocked(why)
}

func (c *conn) closeLocked(why closeReason) error {
	if c.closed {
		return nil
	}
	c.closed = true
	// Requests left unanswered end with the connection.
	if len(c.active) > 0 {
		c.set.opt.Metrics.requests(-len(c.active))
		c.active = nil
	}
	err := c.Conn.Close()
	// Forget the connection (and its peer's count) before its place in
	// the semaphore frees: the accept loop may take the place at once, and
	// must not see this peer still at its limit.
	c.set.remove(c, why)
	<-c.sem
	return err
}

// malformedAnswer counts a request the child could not parse, has the
// handler answer its stand-in and returns the answer in CGI form.
func (cs *connSet) malformedAnswer(reason string) []byte {
	cs.opt.Metrics.malformedRequest()
	w := &cgiWriter{header: http.Header{}, code: http.StatusOK}
	cs.h.ServeHTTP(w, malformedRequest(reason))
	return w.cgi()
}

type malformedKey struct{}

// malformedRequest is the stand-in for a request net/http/fcgi could not
// parse: GET of an empty path with no header and no body, carrying the
// child's error for MalformedReason.
func malformedRequest(reason string) *http.Request {
	ctx := context.WithValue(context.Background(), malformedKey{}, reason)
	return (&http.Request{
		Method: http.MethodGet, URL: &url.URL{}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: http.NoBody,
	}).WithContext(ctx)
}

// MalformedReason reports whether r stands in for a request the FastCGI
// child could not turn into an *http.Request (a bad Host, request URI or
// Content-Length; the child itself would answer a bare 500), and the
// child's error. Serve hands such a stand-in to the handler, which answers
// it as it sees fit (a 400); a handler that does not ask sees a GET of an
// empty path.
func MalformedReason(r *http.Request) (reason string, ok bool) {
	reason, ok = r.Context().Value(malformedKey{}).(string)
	return reason, ok
}

// cgiWriter records an answer to encode it as the child would.
type cgiWriter struct {
	header http.Header
	code   int
	wrote  bool
	body   []byte
}

func (w *cgiWriter) Header() http.Header { return w.header }

func (w *cgiWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
}

func (w *cgiWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, p...)
	return len(p), nil
}

// cgi is the answer as a CGI response: a Status line, the header, the body.
func (w *cgiWriter) cgi() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Status: %d %s\r\n", w.code, http.StatusText(w.code))
	w.header.Write(&b)
	b.WriteString("\r\n")
	b.Write(w.body)
	return b.Bytes()
}
