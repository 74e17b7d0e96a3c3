// Package logs reads what nginx writes about its answers: it counts the
// short access log lines nginx sends to a socket ([AccessLog]) and relays
// its error log with floods held back ([ErrorLogRelay]), both into
// [Metrics]. It knows nothing of nginx's files or process.
package logs

import (
	"bytes"
	"errors"
	"net"
	"os"
	"strconv"
)

// AccessLog counts nginx's answers by status and source from the short
// access log lines nginx sends to a unix datagram socket
// (access_log syslog:server=unix:<Path>, rendered into access-log.conf):
// sudoku_edge_nginx_responses_total.
//
// nginx sends a line for one request in SampleEvery, which counts
// SampleEvery, and for every answer of status 400 and up but 429 and 503,
// which counts once; with All a line for every answer. A line costs
// sudoku-edge 34-55 us (tests/bench/RESULTS.md, "Counting nginx's
// answers"), too much for every answer or for the 503s of an overload.
type AccessLog struct {
	Path string // the socket; empty turns the lines off
	All  bool   // a line for every answer, not a sample

	conn    *net.UnixConn
	metrics *Metrics
}

// SampleEvery is one over the share of requests nginx logs when it does not
// log every answer; nginx.conf's $sudoku_in_sample picks the requests whose
// $request_id ends in its hex digits (conf renders the regex): a power of
// 16.
const SampleEvery = 16

// Format is the log_format of the lines: the status, 1 when the
// request is in the sample (0 when it is logged for its status alone), the
// request's time in nginx in seconds and the upstream's statuses ("-" when
// nginx answered itself), one per try.
const Format = `$status $sudoku_log_sampled $request_time $upstream_status`

// Listen creates the socket (replacing a stale one) with mode 0666, as
// nginx's workers run as another user, for Serve to count its lines into m.
func (a *AccessLog) Listen(m *Metrics) error {
	a.metrics = m
	_ = os.Remove(a.Path)
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: a.Path, Net: "unixgram"})
	if err != nil {
		return err
	}
	if err := os.Chmod(a.Path, 0o666); err != nil {
		conn.Close()
		return err
	}
	a.conn = conn
	return nil
}

// Serve counts lines until Close.
func (a *AccessLog) Serve() error {
	buf := make([]byte, 8192)
	for {
		n, err := a.conn.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		a.line(buf[:n])
	}
}

// Close stops Serve and removes the socket.
func (a *AccessLog) Close() error {
	if a.conn == nil {
		return nil
	}
	err := a.conn.Close()
	_ = os.Remove(a.Path)
	return err
}

// line counts one syslog datagram: "<pri>timestamp tag: message".
func (a *AccessLog) line(b []byte) {
	if i := bytes.Index(b, []byte(": ")); i >= 0 && bytes.HasPrefix(b, []byte("<")) {
		b = b[i+2:]
	}
	f := bytes.Fields(b)
	if len(f) < 4 {
		a.metrics.accessLogError()
		return
	}
	code, err := strconv.Atoi(string(f[0]))
	if err != nil || code < 100 || code > 599 {
		a.metrics.accessLogError()
		return
	}
	seconds, err := strconv.ParseFloat(string(f[2]), 64)
	if err != nil || seconds < 0 {
		a.metrics.accessLogError()
		return
	}
	sampled := string(f[1]) == "1"
	exact := a.All || (code >= 400 && code != 429 && code != 503)
	var weight float64
	switch {
	case exact:
		weight = 1
	case sampled:
		// A sampled line stands for SampleEvery requests.
		weight = SampleEvery
	default:
		return
	}
	source := "worker"
	if nginxAnswered(f[0], f[3:]) {
		source = "nginx"
	}
	a.metrics.response(f[0], source, weight)
	if sampled {
		// The sample is random ($request_id), so its quantiles are every
		// request's; the lines sent for their status alone are not.
		a.metrics.requestTime(source, seconds)
	}
}

// nginxAnswered tells whether nginx gave the answer of status code itself,
// from the tokens of $upstream_status: no upstream ("-"), or one whose last
// status is not the answer's, as when nginx turns its own 502 "no live
// upstreams" into a 503. Tries are separated by ", " and internal redirects
// by " : ", so the last token is the last try's status.
func nginxAnswered(code []byte, upstream [][]byte) bool {
	last := upstream[len(upstream)-1]
	return string(last) == "-" || !bytes.Equal(last, code)
}
