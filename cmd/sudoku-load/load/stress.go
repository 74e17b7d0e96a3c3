package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// StressConfig configures Stress.
type StressConfig struct {
	// URL is the base URL; Stress dials its host:port over plain TCP.
	URL     string
	Puzzles []Puzzle
	// Conns is the number of TCP connections.
	Conns int
	// Count bounds the requests written over all connections.
	Count int
	// Duration bounds the writing.
	Duration time.Duration
	// Grace bounds the reading of answers after writing stopped (0: 5s).
	Grace time.Duration
	// Depth bounds the requests written but not yet answered on one
	// connection, when reading (0: 256).
	Depth int
	// NoRead never reads a response: the connections only write, then
	// stay open until Duration ends.
	NoRead bool
	// Text asks for format=text answers.
	Text bool
	// Progress, if set, is called once a second.
	Progress func(Tick)
}

// StressStats are the stress-only figures of a Result.
type StressStats struct {
	NoRead      bool    `json:"no_read"`
	SendRate    float64 `json:"send_rate"`    // requests written per second
	ReceiveRate float64 `json:"receive_rate"` // answers read per second
	// Resent counts requests written again on a new connection because
	// the server closed theirs ("Connection: close") before answering them.
	Resent int64 `json:"resent"`
}

// Stress writes pipelined HTTP/1.1 requests on raw TCP connections as fast as
// the server takes them, bounded by Count and Duration. Unless NoRead is set,
// a separate goroutine per connection reads and checks the answers (their
// latency runs from the write of the request), with at most Depth requests
// unanswered per connection, and Grace to read the last answers; answers
// still missing then count as timeouts.
func Stress(ctx context.Context, cfg StressConfig) (*Result, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("%w: stress needs an http://host:port URL, got %q", errConfig, cfg.URL)
	}
	if len(cfg.Puzzles) == 0 || cfg.Conns < 1 || cfg.Count < 1 || cfg.Duration <= 0 {
		return nil, fmt.Errorf("%w: want puzzles, conns >= 1, count >= 1 and duration > 0", errConfig)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	// Pre-render every request once: the write loop only copies bytes.
	reqs := make([][]byte, len(cfg.Puzzles))
	for i, p := range cfg.Puzzles {
		q := "/sudoku?puzzle=" + p.Text + "&id=" + url.QueryEscape(p.ID)
		if cfg.Text {
			q += "&format=text"
		}
		reqs[i] = []byte("GET " + q + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: sudoku-load\r\n\r\n")
	}
	client := &Client{text: cfg.Text}

	if cfg.Grace <= 0 {
		cfg.Grace = 5 * time.Second
	}
	if cfg.Depth <= 0 {
		cfg.Depth = 256
	}
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	runCtx, cancel := context.WithDeadline(ctx, deadline.Add(cfg.Grace))
	defer cancel()
	rec := newRecorder(start)
	stopTicks := startTicker(rec, start, cfg.Progress)

	var next atomic.Int64 // request index, shared by all connections
	var resent atomic.Int64
	var wg sync.WaitGroup
	for range cfg.Conns {
		wg.Go(func() {
			stressConn(runCtx, addr, deadline, cfg, reqs, client, &next, rec, &resent)
		})
	}
	wg.Wait()
	end := time.Now()
	stopTicks(end)

	res, err := finish(ctx, rec, &Result{Mode: "stress", Target: cfg.URL, Connections: cfg.Conns}, end.Sub(start))
	res.Stress = &StressStats{NoRead: cfg.NoRead,
		SendRate:    float64(res.Sent) / res.DurationS,
		ReceiveRate: float64(res.Received) / res.DurationS,
		Resent:      resent.Load()}
	return res, err
}

type sentReq struct {
	p    *Puzzle
	req  []byte
	at   time.Time // when first handed to a connection; zero until then
	sent bool      // counted by recorder.Sent
}

// stressConn keeps one pipelined connection going until the writing ends
// and its answers are read. When the server ends a connection with
// "Connection: close" (nginx does after keepalive_requests), the requests
// written after that answer were never processed: they are written again,
// first, on a new connection, as HTTP/1.1 asks of a client that pipelines
// (RFC 9112, section 9.3.2). Their latency still runs from the first write.
func stressConn(ctx context.Context, addr string, deadline time.Time, cfg StressConfig,
	reqs [][]byte, client *Client, next *atomic.Int64, rec *recorder, resent *atomic.Int64) {
	var again []sentReq
	for first := true; ; first = false {
		d := net.Dialer{Timeout: max(time.Until(deadline), time.Second)}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			k := kindOfError(err)
			failAll(again, k, rec)
			// Count one failed request for the connection that never came up.
			if first && next.Add(1) <= int64(cfg.Count) {
				rec.Due()
				rec.Sent()
				rec.Done(k, false, 0)
			}
			return
		}
		for _, s := range again {
			if s.sent {
				resent.Add(1)
			}
		}
		var closed bool
		again, closed = stressOneConn(ctx, conn, deadline, cfg, reqs, client, next, rec, again)
		if ctx.Err() != nil {
			failAll(again, kindOfError(ctx.Err()), rec)
			return
		}
		if !closed || (len(again) == 0 && (time.Now().After(deadline) || next.Load() >= int64(cfg.Count))) {
			return
		}
	}
}

// failAll counts requests that will not be written again as failed with
// kind k; one never written counts as unsent.
func failAll(reqs []sentReq, k Kind, rec *recorder) {
	for _, s := range reqs {
		if s.sent {
			rec.Done(k, false, time.Since(s.at))
		} else {
			rec.Unsent()
		}
	}
}

// stressOneConn writes first the requests in again, then new ones, on
// conn, and reads their answers unless cfg.NoRead. It reports whether the
// server announced that it closes the connection, and the requests it
// then left unanswered (or that were not written yet), oldest first.
func stressOneConn(ctx context.Context, conn net.Conn, deadline time.Time, cfg StressConfig,
	reqs [][]byte, client *Client, next *atomic.Int64, rec *recorder, again []sentReq) ([]sentReq, bool) {
	defer conn.Close()
	// The write loop stops at deadline by itself; the write deadline is a
	// backstop for a server that stops reading, late enough that the last
	// flush still goes out.
	writeBy := deadline.Add(time.Second)
	if !cfg.NoRead {
		writeBy = deadline.Add(cfg.Grace)
	}
	_ = conn.SetWriteDeadline(writeBy)
	_ = conn.SetReadDeadline(deadline.Add(cfg.Grace))
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()

	// Answers come back in request order (HTTP/1.1 pipelining), so the
	// reader pairs them with a FIFO of send times. Its size bounds the
	// requests in flight on one connection.
	var pending chan sentReq
	closing := make(chan struct{}) // closed by the reader on "Connection: close"
	var unanswered []sentReq       // the reader's, once readerDone is closed
	readerDone := make(chan struct{})
	if cfg.NoRead {
		close(readerDone)
	} else {
		pending = make(chan sentReq, cfg.Depth)
		go func() {
			defer close(readerDone)
			unanswered = stressRead(conn, pending, client, rec, closing)
		}()
	}

	w := bufio.NewWriterSize(conn, 32<<10)
	var werr error
	var held []sentReq // taken but not written: the server closed, or a flush failed
write:
	for {
		var sr sentReq
		if len(again) > 0 {
			sr, again = again[0], again[1:]
		} else {
			i := next.Add(1) - 1
			if i >= int64(cfg.Count) || ctx.Err() != nil || time.Now().After(deadline) {
				break
			}
			sr = sentReq{p: &cfg.Puzzles[int(i)%len(cfg.Puzzles)], req: reqs[int(i)%len(reqs)]}
			rec.Due()
		}
		if sr.at.IsZero() {
			sr.at = time.Now()
		}
		if pending != nil {
			select {
			case <-closing:
				held = append(held, sr)
				break write
			case pending <- sr:
			default:
				// The reader is behind: send what is buffered, then wait.
				if werr = w.Flush(); werr == nil {
					select {
					case pending <- sr:
					case <-closing:
						held = append(held, sr)
						break write
					case <-ctx.Done():
						werr = ctx.Err()
					}
				}
				if werr != nil {
					// sr is not written: it goes out again if the server
					// announced the close (the flush then fails on the
					// closed connection), and fails below if not.
					held = append(held, sr)
					break write
				}
			}
		}
		if !sr.sent {
			rec.Sent()
		}
		if _, werr = w.Write(sr.req); werr != nil {
			if cfg.NoRead { // with a reader, the reader counts the failure
				rec.Done(kindOfError(werr), false, 0)
			}
			break
		}
	}
	if werr == nil && len(held) == 0 {
		if werr = w.Flush(); werr != nil && cfg.NoRead {
			rec.Done(kindOfError(werr), false, 0)
		}
	}
	if pending != nil {
		close(pending)
	}
	<-readerDone
	if cfg.NoRead && werr == nil {
		// A client that never reads keeps its connections open: the
		// server holds the answers it could not deliver until the end.
		// Closing at once would reset the connection instead (unread data
		// in the receive buffer), and the server would drop them.
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(deadline)):
		}
	}
	select {
	case <-closing:
		// Requests written after the closing answer went unanswered; the
		// writer counted every one it wrote (recorder.Sent), so they are
		// sent, and only held and again may not be.
		for i := range unanswered {
			unanswered[i].sent = true
		}
		return append(append(unanswered, held...), again...), true
	default:
		failAll(append(held, again...), kindOfError(werr), rec)
		return nil, false
	}
}

// stressRead reads one response per entry of pending, until pending is
// closed and drained or the connection fails; requests left unanswered are
// counted with the kind of that failure. After an answer with "Connection:
// close" it closes closing, stops reading and returns the requests still
// pending: the server never saw them.
func stressRead(conn net.Conn, pending <-chan sentReq, client *Client, rec *recorder, closing chan<- struct{}) []sentReq {
	br := bufio.NewReaderSize(conn, 32<<10)
	for s := range pending {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			k := kindOfError(err)
			if errors.Is(err, io.EOF) {
				k = KindReset
			}
			rec.Done(k, false, time.Since(s.at))
			for s := range pending {
				rec.Done(k, false, time.Since(s.at))
			}
			return nil
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		lat := time.Since(s.at)
		switch {
		case err != nil:
			rec.Done(kindOfError(err), false, lat)
		case resp.StatusCode != http.StatusOK:
			rec.Done(kindOfStatus(resp.StatusCode), true, lat)
		case client.check(*s.p, body) != nil:
			rec.Done(KindWrong, true, lat)
		default:
			rec.Done(KindOK, true, lat)
		}
		if resp.Close {
			close(closing)
			var left []sentReq
			for s := range pending {
				left = append(left, s)
			}
			return left
		}
	}
	return nil
}
