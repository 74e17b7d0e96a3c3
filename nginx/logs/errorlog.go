package logs

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// ErrorLogRelay relays nginx's error log (its stderr, through a pipe) to Out and
// holds back floods. nginx writes one line per event, unbuffered: in an
// overload, one "no live upstreams" line per request it turns away, each a
// write that the container runtime has to carry and that stalls nginx when
// the pipe is full.
// Lines of one kind (level and message, without the connection, client and
// request that vary) pass until Burst of them in a Window; the rest of that
// window are counted, and one summary per kind goes to Log when the window
// ends. Every other line passes as it is.
type ErrorLogRelay struct {
	Out    io.Writer      // where lines go: the container's stderr
	Log    zerolog.Logger // the summaries of held-back lines
	Burst  int            // lines of one kind passed per window; default 10
	Window time.Duration  // default 1s
	// Metrics counts the lines that say nginx cut an answer short because
	// its worker closed the connection in the middle of it, and those that
	// say a limit_req or limit_conn zone turned a request away (passed or
	// held back alike); nil counts nothing.
	Metrics *Metrics
	// Unreachable, when set, is called for each line that says nginx could
	// not connect to a worker (timed out, refused, no route), a busy
	// worker's full backlog excepted.
	Unreachable func()

	mu    sync.Mutex
	start time.Time
	kinds map[string]*kindCount
}

type kindCount struct{ passed, held int }

// truncatedAnswer is nginx's error-log message for an upstream (a worker)
// that closed the connection in the middle of a buffered answer, after
// its header: nginx then ends the client's answer without its last chunk.
// Before the header the message ends "while reading response header from
// upstream" and nginx retries on another worker instead.
var truncatedAnswer = []byte("upstream prematurely closed connection while reading upstream")

// connectFailed reports whether line is nginx's for a connect to a worker
// that failed: "upstream timed out (110: Connection timed out) while
// connecting to upstream", "connect() failed (113: No route to host) while
// connecting to upstream", a refusal. A unix socket's "(11: Resource
// temporarily unavailable)" is a full backlog, a worker that is busy, not
// gone.
func connectFailed(line []byte) bool {
	return bytes.Contains(line, []byte(" while connecting to upstream")) &&
		!bytes.Contains(line, []byte("(11: Resource temporarily unavailable)"))
}

// limitedZone reports the zone of nginx's line for a request a limit
// turned away: `limiting requests, excess: 200.010 by zone "sudoku_req"`
// (limit_req) or `limiting connections by zone "sudoku_client_conn"`
// (limit_conn); dry runs ("limiting requests, dry run") are not refusals.
func limitedZone(line []byte) (string, bool) {
	i := bytes.Index(line, []byte("] "))
	if i < 0 {
		return "", false
	}
	msg := line[i:]
	if !bytes.Contains(msg, []byte(" limiting requests, excess: ")) && !bytes.Contains(msg, []byte(" limiting connections by zone ")) {
		return "", false
	}
	_, rest, ok := bytes.Cut(msg, []byte(`by zone "`))
	if !ok {
		return "", false
	}
	zone, _, ok := bytes.Cut(rest, []byte(`"`))
	if !ok || len(zone) == 0 || len(zone) > 64 {
		return "", false
	}
	return string(zone), true
}

// maxKinds bounds the kinds tracked in one window; lines of further kinds
// share one count.
const maxKinds = 256

// otherKinds is the kind of lines past maxKinds.
const otherKinds = "(other kinds)"

// Relay copies r to Out line by line until r ends: EOF once nginx and every
// process that inherited its stderr have exited. It then reports what was
// held back and returns nil, or the error of a write or read.
func (e *ErrorLogRelay) Relay(r io.Reader) error {
	burst, window := e.Burst, e.Window
	if burst <= 0 {
		burst = 10
	}
	if window <= 0 {
		window = time.Second
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(window)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				e.mu.Lock()
				if now.Sub(e.start) >= window {
					e.endWindow(now)
				}
				e.mu.Unlock()
			}
		}
	}()
	br := bufio.NewReaderSize(r, 16<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if werr := e.line(line, burst, window); werr != nil {
				return werr
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			e.mu.Lock()
			e.endWindow(time.Now())
			e.mu.Unlock()
			return nil
		default:
			return err
		}
	}
}

// line passes or counts one line.
func (e *ErrorLogRelay) line(line []byte, burst int, window time.Duration) error {
	e.mu.Lock()
	now := time.Now()
	if e.kinds == nil || now.Sub(e.start) >= window {
		e.endWindow(now)
	}
	if bytes.Contains(line, truncatedAnswer) {
		e.Metrics.truncatedAnswer()
	}
	if e.Unreachable != nil && connectFailed(line) {
		e.Unreachable()
	}
	if zone, ok := limitedZone(line); ok {
		e.Metrics.limitedAt(zone)
	}
	k := lineKind(line)
	c := e.kinds[string(k)]
	if c == nil {
		key := string(k)
		if len(e.kinds) >= maxKinds {
			key = otherKinds
		}
		if c = e.kinds[key]; c == nil {
			c = &kindCount{}
			e.kinds[key] = c
		}
	}
	pass := c.passed < burst
	if pass {
		c.passed++
	} else {
		c.held++
	}
	e.mu.Unlock()
	if !pass {
		return nil
	}
	_, err := e.Out.Write(line)
	return err
}

// endWindow logs a summary for every kind with held-back lines and starts a
// new window at now. The caller holds mu.
func (e *ErrorLogRelay) endWindow(now time.Time) {
	for k, c := range e.kinds {
		if c.held > 0 {
			e.Log.Warn().Str("kind", k).Int("held_back", c.held).Int("passed", c.passed).
				Dur("window", now.Sub(e.start)).Msg("nginx error log lines held back")
		}
	}
	e.kinds = make(map[string]*kindCount)
	e.start = now
}

// lineKind is what makes two error-log lines "the same": the level and the
// message of `2026/11/30 15:48:15 [error] 31#31: *1234 <message>, client:
// ...`, without the time, the process, the connection number and the
// client's details. A line in another shape is its own kind.
func lineKind(line []byte) []byte {
	line = bytes.TrimRight(line, "\r\n")
	lb := bytes.IndexByte(line, '[')
	rb := bytes.IndexByte(line, ']')
	if lb < 0 || rb < lb {
		return line
	}
	level := line[lb : rb+1]
	msg := bytes.TrimLeft(line[rb+1:], " ")
	// "31#31: " (process and thread), then "*1234 " (connection).
	if i := bytes.Index(msg, []byte(": ")); i > 0 && bytes.IndexByte(msg[:i], '#') > 0 && bytes.IndexByte(msg[:i], ' ') < 0 {
		msg = msg[i+2:]
	}
	if len(msg) > 0 && msg[0] == '*' {
		if i := bytes.IndexByte(msg, ' '); i >= 0 {
			msg = msg[i+1:]
		}
	}
	if i := bytes.Index(msg, []byte(", client: ")); i >= 0 {
		msg = msg[:i]
	}
	kind := make([]byte, 0, len(level)+1+len(msg))
	kind = append(kind, level...)
	kind = append(kind, ' ')
	return append(kind, msg...)
}

// CopyLines copies r to w until r ends, in writes of whole lines of at
// most 16 KiB together (a longer line goes in parts), so that a writer
// that drops writes under pressure (cli.LogWriter) drops lines, never
// parts of one.
func CopyLines(w io.Writer, r io.Reader) error {
	buf := make([]byte, 16<<10)
	n := 0
	for {
		m, err := r.Read(buf[n:])
		n += m
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			w.Write(buf[:i+1])
			n = copy(buf, buf[i+1:n])
		} else if n == len(buf) {
			w.Write(buf)
			n = 0
		}
		if err != nil {
			if n > 0 {
				w.Write(buf[:n])
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
