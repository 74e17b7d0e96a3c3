// Package fcgitest speaks the web server's side of FastCGI for tests: it
// encodes records and whole requests the way nginx sends them, and reads
// answers back into status, header and body. The tests of fcgi and the
// reliability suite's raw abuser (tests/reliability/fcgiabuse) use it.
//
// It is for tests only; no production code may import it.
package fcgitest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Record types (FastCGI 1.0).
const (
	TypeBeginRequest uint8 = 1
	TypeAbortRequest uint8 = 2
	TypeEndRequest   uint8 = 3
	TypeParams       uint8 = 4
	TypeStdin        uint8 = 5
	TypeStdout       uint8 = 6
	TypeStderr       uint8 = 7
)

// MaxContent is the most content one record carries.
const MaxContent = 0xffff

// Header returns a record header. contentLen and padding are written as
// given, so a test can claim bytes it never sends.
func Header(typ uint8, id uint16, contentLen int, padding uint8) []byte {
	h := []byte{1, typ, 0, 0, 0, 0, padding, 0}
	binary.BigEndian.PutUint16(h[2:], id)
	binary.BigEndian.PutUint16(h[4:], uint16(contentLen))
	return h
}

// Record returns one record holding content (at most MaxContent bytes),
// padded to a multiple of 8 bytes as nginx pads.
func Record(typ uint8, id uint16, content []byte) []byte {
	pad := -len(content) & 7
	b := append(Header(typ, id, len(content), uint8(pad)), content...)
	return append(b, make([]byte, pad)...)
}

// BeginRequest returns an FCGI_BEGIN_REQUEST for the responder role;
// keepConn sets FCGI_KEEP_CONN, as nginx's fastcgi_keep_conn does.
func BeginRequest(id uint16, keepConn bool) []byte {
	body := []byte{0, 1, 0, 0, 0, 0, 0, 0}
	if keepConn {
		body[2] = 1
	}
	return Record(TypeBeginRequest, id, body)
}

// Pair encodes one name-value pair, each length in 1 byte below 128 and
// in 4 bytes above.
func Pair(name, value string) []byte {
	var b []byte
	for _, s := range []string{name, value} {
		if len(s) < 128 {
			b = append(b, byte(len(s)))
		} else {
			b = binary.BigEndian.AppendUint32(b, uint32(len(s))|1<<31)
		}
	}
	return append(append(b, name...), value...)
}

// Pairs encodes params in the order of their names.
func Pairs(params map[string]string) []byte {
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	var b []byte
	for _, k := range names {
		b = append(b, Pair(k, params[k])...)
	}
	return b
}

// Request encodes a whole request as nginx sends it: BEGIN_REQUEST with
// FCGI_KEEP_CONN, the CGI params (extra added or replacing), and the body
// as STDIN records, each stream closed by an empty record. host "" sends
// no HTTP_HOST.
func Request(id uint16, method, uri, host string, extra map[string]string, body []byte) []byte {
	path, query, _ := strings.Cut(uri, "?")
	params := map[string]string{
		"REQUEST_METHOD":  method,
		"REQUEST_URI":     uri,
		"SCRIPT_NAME":     path,
		"QUERY_STRING":    query,
		"SERVER_PROTOCOL": "HTTP/1.1",
		"REMOTE_ADDR":     "127.0.0.1",
		"REMOTE_PORT":     "5555",
		"CONTENT_LENGTH":  strconv.Itoa(len(body)),
	}
	if host != "" {
		params["HTTP_HOST"] = host
	}
	for k, v := range extra {
		params[k] = v
	}
	b := BeginRequest(id, true)
	b = append(b, Record(TypeParams, id, Pairs(params))...)
	b = append(b, Record(TypeParams, id, nil)...)
	for len(body) > 0 {
		n := min(len(body), MaxContent)
		b = append(b, Record(TypeStdin, id, body[:n])...)
		body = body[n:]
	}
	return append(b, Record(TypeStdin, id, nil)...)
}

// A Response is one request's answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	Stderr []byte
	// StdoutRecords counts the non-empty STDOUT records; a streamed
	// answer shows several.
	StdoutRecords int
}

// ParseCGI reads a CGI answer (a header, an empty line, the body) into
// resp; the status is 200 unless a Status header says otherwise.
func ParseCGI(b []byte, resp *Response) error {
	tr := textproto.NewReader(bufio.NewReader(bytes.NewReader(b)))
	h, err := tr.ReadMIMEHeader()
	if err != nil {
		return fmt.Errorf("parsing CGI header %q: %w", b, err)
	}
	resp.Header = http.Header(h)
	resp.Status = 200
	if s := h.Get("Status"); s != "" {
		code, _, _ := strings.Cut(s, " ")
		if resp.Status, err = strconv.Atoi(code); err != nil {
			return fmt.Errorf("status %q: %w", s, err)
		}
	}
	resp.Body, err = io.ReadAll(tr.R)
	return err
}

// A Client is one FastCGI connection from the web server's side.
type Client struct {
	tb   testing.TB
	Conn net.Conn
	r    *bufio.Reader
}

// Listen listens on network and addr ("tcp", "127.0.0.1:0" for a free
// loopback port; "unix" and a socket path); the listener closes when the
// test ends, if nothing closed it before.
func Listen(tb testing.TB, network, addr string) net.Listener {
	tb.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	return ln
}

// ListenUnix listens on a unix socket in a fresh temporary directory and
// returns the listener, which closes when the test ends, and the path.
func ListenUnix(tb testing.TB) (net.Listener, string) {
	tb.Helper()
	path := tb.TempDir() + "/s.sock"
	return Listen(tb, "unix", path), path
}

// Dial connects to addr; the connection closes when the test ends.
func Dial(tb testing.TB, addr string) *Client {
	tb.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		tb.Fatalf("dial %s: %v", addr, err)
	}
	return NewClient(tb, c)
}

// NewClient speaks over conn, which closes when the test ends.
func NewClient(tb testing.TB, conn net.Conn) *Client {
	tb.Cleanup(func() { conn.Close() })
	return &Client{tb: tb, Conn: conn, r: bufio.NewReader(conn)}
}

// Send writes b, failing the test if it cannot within 5 seconds.
func (c *Client) Send(b []byte) {
	c.tb.Helper()
	c.Conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Conn.Write(b); err != nil {
		c.tb.Fatalf("writing request: %v", err)
	}
}

// ReadRecord reads one record.
func (c *Client) ReadRecord() (typ uint8, id uint16, content []byte, err error) {
	var h [8]byte
	if _, err = io.ReadFull(c.r, h[:]); err != nil {
		return
	}
	n := int(binary.BigEndian.Uint16(h[4:]))
	buf := make([]byte, n+int(h[6]))
	if _, err = io.ReadFull(c.r, buf); err != nil {
		return
	}
	return h[1], binary.BigEndian.Uint16(h[2:]), buf[:n], nil
}

// Read collects the records of request id until its FCGI_END_REQUEST,
// within 10 seconds.
func (c *Client) Read(id uint16) (*Response, error) {
	c.Conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	return c.read(id)
}

func (c *Client) read(id uint16) (*Response, error) {
	var stdout []byte
	resp := &Response{}
	for {
		typ, rid, content, err := c.ReadRecord()
		if err != nil {
			return nil, err
		}
		if rid != id {
			return nil, fmt.Errorf("record for request %d, want %d", rid, id)
		}
		switch typ {
		case TypeStdout:
			if len(content) > 0 {
				resp.StdoutRecords++
			}
			stdout = append(stdout, content...)
		case TypeStderr:
			resp.Stderr = append(resp.Stderr, content...)
		case TypeEndRequest:
			return resp, ParseCGI(stdout, resp)
		}
	}
}

// Do sends one request and reads its answer, failing the test on error.
func (c *Client) Do(id uint16, method, uri, host string, body []byte) *Response {
	c.tb.Helper()
	c.Send(Request(id, method, uri, host, nil, body))
	resp, err := c.Read(id)
	if err != nil {
		c.tb.Fatalf("%s %s: %v", method, uri, err)
	}
	return resp
}

// Try sends one GET and reads its answer within d, returning the error
// where Do fails the test: for a server that may close the connection
// before or after the request is written.
func (c *Client) Try(id uint16, uri, host string, d time.Duration) (*Response, error) {
	c.Conn.SetDeadline(time.Now().Add(d))
	if _, err := c.Conn.Write(Request(id, "GET", uri, host, nil, nil)); err != nil {
		return nil, err
	}
	return c.read(id)
}

// ReadStdout reads records up to the next FCGI_END_REQUEST and returns the
// STDOUT content among them.
func (c *Client) ReadStdout() ([]byte, error) {
	var stdout []byte
	for {
		typ, _, content, err := c.ReadRecord()
		switch {
		case err != nil:
			return stdout, err
		case typ == TypeEndRequest:
			return stdout, nil
		case typ == TypeStdout:
			stdout = append(stdout, content...)
		}
	}
}

// ClosedByPeer reports whether the other side closes the connection
// within d; what it sends before is discarded.
func (c *Client) ClosedByPeer(d time.Duration) bool {
	c.Conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c.r)
	var ne net.Error
	return !errors.As(err, &ne) || !ne.Timeout()
}
