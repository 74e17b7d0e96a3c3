package admission

import (
	"bytes"
	"errors"
	"net"
	"os"
	"strconv"
	"sync"

	"github.com/rs/zerolog"
)

// logFormat is the nginx log_format the LogCounter reads, one line per
// request logged: the status, 1 when the request is in the sample (0 when
// it is logged for its status alone), what limit_req did, the route, the
// upstream's statuses ("-" when nginx answered itself) and response
// times, one per try. The maps are in the rendered admission-http.conf.
const logFormat = `$status $sudoku_log_sampled $limit_req_status $sudoku_admission_route $upstream_status $upstream_response_time`

// LogCounter counts the lines nginx sends to a unix datagram socket
// (access_log syslog:server=unix:<Path>): answers by status and source,
// and what the admission queue did to GET /sudoku. listen, then serve.
//
// nginx sends a line for one request in sampleEvery, which counts
// sampleEvery, and for every answer of status 400 and up but 429 and 503,
// which counts once; with All a line for every answer. A line costs
// sudoku-edge 34-55 us (tests/bench/RESULTS.md, "Counting nginx's
// answers"), too much for every answer or for the 503s of an overload.
type LogCounter struct {
	Path    string
	All     bool // every answer, not only status 400 and up
	Metrics *Metrics
	Log     zerolog.Logger

	conn *net.UnixConn

	mu                        sync.Mutex
	passed, delayed, rejected float64 // GET /sudoku, since the start
	upstreamN, upstreamSec    float64 // GET /sudoku answered by a worker
}

// listen creates the socket (replacing a stale one) with mode 0666: nginx's
// workers run as another user.
func (c *LogCounter) listen() error {
	_ = os.Remove(c.Path)
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: c.Path, Net: "unixgram"})
	if err != nil {
		return err
	}
	if err := os.Chmod(c.Path, 0o666); err != nil {
		conn.Close()
		return err
	}
	c.conn = conn
	return nil
}

// serve reads lines until close.
func (c *LogCounter) serve() error {
	buf := make([]byte, 8192)
	for {
		n, err := c.conn.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		c.line(buf[:n])
	}
}

// close stops serve and removes the socket.
func (c *LogCounter) close() error {
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	_ = os.Remove(c.Path)
	return err
}

// logTotals are the counts since the start, for GET /sudoku.
type logTotals struct {
	Passed, Delayed, Rejected float64
	// Upstream answers and the sum of their times as nginx saw them
	// (connect to last byte): the whole stack behind nginx, where a
	// worker's own queue shows only the part waiting for a solver slot.
	Upstream, UpstreamSeconds float64
}

// lines are the log lines c reads, for the includes.
func (c *LogCounter) lines() logLines { return logLines{Socket: c.Path, Every: c.All} }

// totals returns the counts since the start.
func (c *LogCounter) totals() logTotals {
	c.mu.Lock()
	defer c.mu.Unlock()
	return logTotals{c.passed, c.delayed, c.rejected, c.upstreamN, c.upstreamSec}
}

// line counts one syslog datagram: "<pri>timestamp tag: message".
func (c *LogCounter) line(b []byte) {
	if i := bytes.Index(b, []byte(": ")); i >= 0 && bytes.HasPrefix(b, []byte("<")) {
		b = b[i+2:]
	}
	f := bytes.Fields(b)
	if len(f) < 5 {
		c.bad()
		return
	}
	code, err := strconv.Atoi(string(f[0]))
	if err != nil || code < 100 || code > 599 {
		c.bad()
		return
	}
	sampled, limit, route := string(f[1]) == "1", string(f[2]), string(f[3])
	// A sampled line stands for sampleEvery requests; a line sent for its
	// status alone for one, and only for the count by status.
	weight := 1.0
	if !c.All && sampled {
		weight = sampleEvery
	}
	exact := c.All || (code >= 400 && code != 429 && code != 503)
	source := "worker"
	if nginxAnswered(f[0], f[4:]) {
		source = "nginx"
	}
	if m := c.Metrics; m != nil {
		switch {
		case exact:
			m.responses.WithLabelValues(strconv.Itoa(code), source).Inc()
		case sampled:
			m.responses.WithLabelValues(strconv.Itoa(code), source).Add(weight)
		}
	}
	if route != "get" || !sampled {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if source == "worker" && len(f) >= 6 {
		// "0.003", or "0.001, 0.002" after a retry: the last one answered.
		t := f[len(f)-1]
		if v, err := strconv.ParseFloat(string(t), 64); err == nil && v >= 0 {
			c.upstreamN += weight
			c.upstreamSec += weight * v
		}
	}
	var result string
	switch limit {
	case "PASSED":
		c.passed += weight
		result = "passed"
	case "DELAYED":
		c.passed += weight
		c.delayed += weight
		result = "delayed"
	case "REJECTED":
		c.rejected += weight
		result = "rejected"
	default:
		return
	}
	if m := c.Metrics; m != nil {
		m.admission.WithLabelValues(result).Add(weight)
	}
}

// nginxAnswered tells whether nginx gave the answer of status code itself,
// from the tokens of $upstream_status and $upstream_response_time: no
// upstream ("-"), or one whose last status is not the answer's, as when
// nginx turns its own 502 "no live upstreams" into a 503. Both lists
// have one entry per try, with the same separators (", " and " : "), so
// the last status is the last token of the first half.
func nginxAnswered(code []byte, upstream [][]byte) bool {
	if string(upstream[0]) == "-" {
		return true
	}
	last := bytes.TrimSuffix(upstream[(len(upstream)+1)/2-1], []byte(","))
	return !bytes.Equal(last, code)
}

func (c *LogCounter) bad() {
	if c.Metrics != nil {
		c.Metrics.logErrors.Inc()
	}
}
