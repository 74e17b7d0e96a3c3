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
// request: the status, what limit_req did, the route, the upstream's
// statuses ("-" when nginx answered itself) and response times, one per
// try. The route map is in the rendered admission-http.conf.
const logFormat = `$status $limit_req_status $sudoku_admission_route $upstream_status $upstream_response_time`

// LogCounter counts the lines nginx sends to a unix datagram socket
// (access_log syslog:server=unix:<Path>): answers by status and source,
// and what the admission queue did to GET /sudoku. listen, then serve.
//
// nginx sends a line only for an answer of status 400 and up, so that the
// common answer costs nothing, unless All is set or the admission Loop
// runs: its law needs every GET /sudoku, and then nginx sends every answer.
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
	if len(f) < 4 {
		c.bad()
		return
	}
	code, err := strconv.Atoi(string(f[0]))
	if err != nil || code < 100 || code > 599 {
		c.bad()
		return
	}
	limit, route := string(f[1]), string(f[2])
	source := "worker"
	if nginxAnswered(f[0], f[3:]) {
		source = "nginx"
	}
	if m := c.Metrics; m != nil {
		m.responses.WithLabelValues(strconv.Itoa(code), source).Inc()
	}
	if route != "get" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if source == "worker" && len(f) >= 5 {
		// "0.003", or "0.001, 0.002" after a retry: the last one answered.
		t := f[len(f)-1]
		if v, err := strconv.ParseFloat(string(t), 64); err == nil && v >= 0 {
			c.upstreamN++
			c.upstreamSec += v
		}
	}
	var result string
	switch limit {
	case "PASSED":
		c.passed++
		result = "passed"
	case "DELAYED":
		c.passed++
		c.delayed++
		result = "delayed"
	case "REJECTED":
		c.rejected++
		result = "rejected"
	default:
		return
	}
	if m := c.Metrics; m != nil {
		m.admission.WithLabelValues(result).Inc()
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
