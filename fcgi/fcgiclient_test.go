package fcgi

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fcgiClient is a minimal FastCGI web-server side for tests: it sends
// requests the way nginx does (one at a time, FCGI_KEEP_CONN) and reads
// the records back.
type fcgiClient struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dialFCGI(t *testing.T, addr string) *fcgiClient {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &fcgiClient{t: t, conn: c, r: bufio.NewReader(c)}
}

func record(typ uint8, id uint16, content []byte) []byte {
	return appendRecord(nil, typ, id, content)
}

func encodePairs(params map[string]string) []byte {
	var b []byte
	size := func(n int) {
		if n > 127 {
			b = binary.BigEndian.AppendUint32(b, uint32(n)|1<<31)
		} else {
			b = append(b, byte(n))
		}
	}
	for k, v := range params {
		size(len(k))
		size(len(v))
		b = append(b, k...)
		b = append(b, v...)
	}
	return b
}

func beginRecord(id uint16, keep bool) []byte {
	var flags byte
	if keep {
		flags = 1
	}
	return record(recBeginRequest, id, []byte{0, 1, flags, 0, 0, 0, 0, 0})
}

// requestBytes encodes a whole request as nginx would send it.
func requestBytes(id uint16, method, uri, host string, extra map[string]string, body []byte) []byte {
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
	var b []byte
	b = append(b, beginRecord(id, true)...)
	b = append(b, record(recParams, id, encodePairs(params))...)
	b = append(b, record(recParams, id, nil)...)
	for len(body) > 0 {
		n := min(len(body), 65535)
		b = append(b, record(recStdin, id, body[:n])...)
		body = body[n:]
	}
	return append(b, record(recStdin, id, nil)...)
}

type fcgiResponse struct {
	status int
	header http.Header
	body   []byte
	stderr []byte
	// stdoutRecords counts non-empty STDOUT records (streaming shows as many)
	stdoutRecords int
}

func (c *fcgiClient) send(b []byte) {
	c.t.Helper()
	c.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatalf("writing request: %v", err)
	}
}

// readRecord reads one record.
func (c *fcgiClient) readRecord() (typ uint8, id uint16, content []byte, err error) {
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

// read collects records for id until its FCGI_END_REQUEST.
func (c *fcgiClient) read(id uint16) (*fcgiResponse, error) {
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var stdout, stderr []byte
	resp := &fcgiResponse{}
	for {
		typ, rid, content, err := c.readRecord()
		if err != nil {
			return nil, err
		}
		if rid != id {
			return nil, fmt.Errorf("record for request %d, want %d", rid, id)
		}
		switch typ {
		case recStdout:
			if len(content) > 0 {
				resp.stdoutRecords++
			}
			stdout = append(stdout, content...)
		case recStderr:
			stderr = append(stderr, content...)
		case recEndRequest:
			resp.stderr = stderr
			return resp, parseCGI(stdout, resp)
		}
	}
}

func parseCGI(b []byte, resp *fcgiResponse) error {
	tr := textproto.NewReader(bufio.NewReader(bytes.NewReader(b)))
	h, err := tr.ReadMIMEHeader()
	if err != nil {
		return fmt.Errorf("parsing CGI header %q: %w", b, err)
	}
	resp.header = http.Header(h)
	resp.status = 200
	if s := h.Get("Status"); s != "" {
		code, _, _ := strings.Cut(s, " ")
		if resp.status, err = strconv.Atoi(code); err != nil {
			return fmt.Errorf("status %q: %w", s, err)
		}
	}
	resp.body, err = io.ReadAll(tr.R)
	return err
}

// do sends one request and reads its answer.
func (c *fcgiClient) do(id uint16, method, uri, host string, body []byte) *fcgiResponse {
	c.t.Helper()
	c.send(requestBytes(id, method, uri, host, nil, body))
	resp, err := c.read(id)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, uri, err)
	}
	return resp
}
