package nginx

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"sudoku-fcgi/nginx/nginxtest"
)

// brokenWorker is a FastCGI worker that answers each request with the
// response head and the lines it is given, then closes the connection
// without ending the request (FCGI_END_REQUEST never comes): a worker
// that dies in the middle of a batch. After the first line it waits for
// next (at most 5 s) before it sends the rest.
func brokenWorker(t *testing.T, head string, lines []string, next <-chan struct{}) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveBroken(c, head, lines, next)
		}
	}()
	return ln.Addr().String()
}

// serveBroken reads one request's records up to its empty FCGI_STDIN and
// answers as brokenWorker says.
func serveBroken(c net.Conn, head string, lines []string, next <-chan struct{}) {
	defer c.Close()
	r := bufio.NewReader(c)
	var id uint16
	for {
		var h [8]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return
		}
		typ, n, pad := h[1], binary.BigEndian.Uint16(h[4:6]), h[6]
		id = binary.BigEndian.Uint16(h[2:4])
		if _, err := io.CopyN(io.Discard, r, int64(n)+int64(pad)); err != nil {
			return
		}
		if typ == 5 && n == 0 { // FCGI_STDIN, empty: the body is complete
			break
		}
	}
	stdout := func(s string) error {
		h := [8]byte{1, 6, byte(id >> 8), byte(id), byte(len(s) >> 8), byte(len(s)), 0, 0}
		_, err := c.Write(append(h[:], s...))
		return err
	}
	if stdout(head) != nil {
		return
	}
	for i, l := range lines {
		if i == 1 {
			select {
			case <-next:
			case <-time.After(5 * time.Second):
			}
		}
		if stdout(l) != nil {
			return
		}
	}
}

// TestShippedBrokenBatchIsTruncated (a broken batch ends unlike a whole
// one): a worker that dies in the middle of a batch's answer makes nginx
// end the client's answer without its last chunk, so the client reads an
// error (curl exits non-zero), not a complete answer, and nginx's access
// log has no completion for it; the first line still reaches the client
// before the worker sends the next (the answer streams).
func TestShippedBrokenBatchIsTruncated(t *testing.T) {
	next := make(chan struct{})
	worker := brokenWorker(t, "Status: 200 OK\r\nContent-Type: text/plain\r\nX-Accel-Buffering: no\r\n\r\n",
		[]string{"a:1\n", "b:2\n", "c:3\n"}, next)
	s := startShipped(t, "127.0.0.1:%d", nil, func(sup *Supervisor) {
		sup.Config.Workers = targets(t, worker)
	})
	req, _ := http.NewRequest("POST", s.url("127.0.0.1", "/sudoku"), strings.NewReader("a:1\nb:2\nc:3\nd:4\n"))
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := bufio.NewReader(resp.Body)
	first, err := body.ReadString('\n')
	if err != nil || first != "a:1\n" {
		t.Fatalf("first line %q, %v; want a:1 before the worker sends more", first, err)
	}
	close(next)
	rest, err := io.ReadAll(body)
	if resp.StatusCode != 200 || string(rest) != "b:2\nc:3\n" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a batch whose worker died: %d, then %q, %v; want 200, the lines sent, then an unexpected EOF", resp.StatusCode, rest, err)
	}
	nginxtest.WaitUntil(t, 5*time.Second, "the truncated answer counted", func() error {
		if n := metricValue(t, s.metrics, "nginx_truncated_answers_total"); n != 1 {
			return fmt.Errorf("sudoku_edge_nginx_truncated_answers_total %v, want 1", n)
		}
		return nil
	})
}
