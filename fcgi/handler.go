package fcgi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"sudoku-fcgi/solver"
)

// Config sets the service's limits. Zero values take the documented
// defaults (see withDefaults).
type Config struct {
	WorkerID      string        // X-Sudoku-Worker header and stats; default "sudoku"
	PoolSize      int           // solver slots; default GOMAXPROCS
	QueueSize     int           // puzzles that may wait for a slot; default 1024; <0 means none
	QueueTimeout  time.Duration // longest wait for a slot (refused at once when the expected wait is over half); default 200ms
	SolveTimeout  time.Duration // budget for one solve; default 1s
	MaxBatchLines int           // lines in one POST; default 10000
	MaxBodyBytes  int64         // POST body size; default 1 MiB
	BatchParallel int           // puzzles of one batch solved at once; default PoolSize
	BatchTimeout  time.Duration // deadline of one POST batch; default 30s
	AccessLog     bool          // one info line per request
}

func (c Config) withDefaults() Config {
	if c.WorkerID == "" {
		c.WorkerID = "sudoku"
	}
	if c.PoolSize <= 0 {
		c.PoolSize = runtime.GOMAXPROCS(0)
	}
	if c.QueueSize == 0 {
		c.QueueSize = 1024
	}
	if c.QueueSize < 0 {
		c.QueueSize = 0
	}
	if c.QueueTimeout <= 0 {
		c.QueueTimeout = 200 * time.Millisecond
	}
	if c.SolveTimeout <= 0 {
		c.SolveTimeout = time.Second
	}
	if c.MaxBatchLines <= 0 {
		c.MaxBatchLines = 10000
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.BatchParallel <= 0 {
		c.BatchParallel = c.PoolSize
	}
	if c.BatchTimeout <= 0 {
		c.BatchTimeout = 30 * time.Second
	}
	return c
}

type solveFunc func(context.Context, solver.Grid, int) (solver.Result, error)

// Service is the worker: public handler, pool, stats and metrics. Create it
// with New; it is safe for concurrent use.
type Service struct {
	cfg   Config
	log   zerolog.Logger
	pool  *pool
	stats *stats
	m     *Metrics
	solve solveFunc // solver.SolveContext; tests replace it

	draining atomic.Bool
	inFlight atomic.Int64
	conns    atomic.Int64

	hdrWorker []string
	date      atomic.Pointer[dateValue]
	bufs      sync.Pool
}

type dateValue struct {
	unix int64
	v    []string
}

// New builds a Service. m may be nil (no metrics).
func New(cfg Config, log zerolog.Logger, m *Metrics) *Service {
	cfg = cfg.withDefaults()
	if m == nil {
		m = NewMetrics()
	}
	s := &Service{
		cfg:       cfg,
		log:       log,
		pool:      newPool(cfg.PoolSize, cfg.QueueSize, cfg.QueueTimeout),
		stats:     newStats(time.Now()),
		m:         m,
		solve:     solver.SolveContext,
		hdrWorker: []string{cfg.WorkerID},
	}
	s.bufs.New = func() any { b := make([]byte, 0, 512); return &b }
	return s
}

// Config returns the effective configuration (defaults filled in).
func (s *Service) Config() Config { return s.cfg }

// Collector exposes the pool and drain state as gauges; register it next to
// the Metrics.
func (s *Service) Collector() prometheus.Collector {
	return newPoolCollector(s.pool, s.draining.Load)
}

// SetDraining switches the service into (or out of) draining: /readyz
// fails and new public requests get 503. Serve's OnDrain calls it.
func (s *Service) SetDraining(v bool) { s.draining.Store(v) }

// Draining reports whether the service is draining.
func (s *Service) Draining() bool { return s.draining.Load() }

var (
	hdrJSON        = []string{"application/json"}
	hdrText        = []string{"text/plain; charset=utf-8"}
	hdrNoStore     = []string{"no-store"}
	hdrRetryAfter  = []string{"1"}
	hdrNo          = []string{"no"}
	hdrAllowSudoku = []string{"GET, POST"}
	hdrAllowStats  = []string{"GET"}
	smallLengths   = func() (t [1024][]string) {
		for i := range t {
			t[i] = []string{strconv.Itoa(i)}
		}
		return t
	}()
)

func (s *Service) dateHeader(now time.Time) []string {
	unix := now.Unix()
	if d := s.date.Load(); d != nil && d.unix == unix {
		return d.v
	}
	d := &dateValue{unix: unix, v: []string{now.UTC().Format(http.TimeFormat)}}
	s.date.Store(d)
	return d.v
}

// reqState is what one request leaves for the access line and the stats.
type reqState struct {
	status    int
	outcome   outcome
	queueWait time.Duration
	solve     time.Duration
	wrote     bool
	errMsg    string
}

// ServeHTTP is the public handler: routing, panic recovery, the
// X-Sudoku-Worker header, stats, metrics and the access line.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	s.inFlight.Add(1)
	s.m.inFlight.Inc()
	var st reqState
	defer s.finish(w, r, &st, start)
	s.route(w, r, &st, start)
}

func (s *Service) finish(w http.ResponseWriter, r *http.Request, st *reqState, start time.Time) {
	if p := recover(); p != nil {
		s.m.panics.Inc()
		s.log.Error().Str("req_id", r.Header.Get("X-Request-Id")).
			Str("panic", fmt.Sprint(p)).Bytes("stack", stack()).Msg("handler panic")
		if !st.wrote {
			s.fail(w, st, errPanic, "")
		} else {
			st.status, st.outcome = http.StatusInternalServerError, outcomeInternalError
		}
	}
	end := time.Now()
	d := end.Sub(start)
	s.inFlight.Add(-1)
	s.m.inFlight.Dec()
	s.m.requestSeconds.Observe(d.Seconds())
	s.account(r, st, end, d)
}

// account records a finished request in the stats and metrics and writes
// its access line; r is nil for a request net/http/fcgi could not parse.
func (s *Service) account(r *http.Request, st *reqState, end time.Time, d time.Duration) {
	s.stats.record(st.outcome, end, d)
	s.m.byOutcome[st.outcome].Inc()
	if !s.cfg.AccessLog {
		return
	}
	e := s.log.Info()
	if e == nil {
		return
	}
	if r != nil {
		e.Str("req_id", r.Header.Get("X-Request-Id")).
			Str("method", r.Method).
			Str("path", r.URL.Path)
	}
	e.Int("status", st.status).
		Str("outcome", st.outcome.String()).
		Dur("duration", d).
		Dur("queue_wait", st.queueWait).
		Dur("solve_duration", st.solve)
	if st.errMsg != "" {
		e.Str("error", st.errMsg)
	}
	e.Msg("request")
}

// ServeMalformed answers a request net/http/fcgi could not turn into an
// *http.Request (a bad Host, request URI or Content-Length) with a JSON
// 400 and counts it; reason is the child's error. It is Serve's Malformed
// option.
func (s *Service) ServeMalformed(w http.ResponseWriter, reason string) {
	s.m.malformed.Inc()
	var st reqState
	s.fail(w, &st, errMalformed, "")
	st.errMsg = reason
	s.account(nil, &st, time.Now(), 0)
}

func stack() []byte {
	b := make([]byte, 4096)
	return b[:runtime.Stack(b, false)]
}

func (s *Service) route(w http.ResponseWriter, r *http.Request, st *reqState, now time.Time) {
	switch r.URL.Path {
	case "/sudoku":
		if s.draining.Load() {
			s.fail(w, st, errDraining, "")
			return
		}
		switch r.Method {
		case http.MethodGet:
			s.get(w, r, st)
		case http.MethodPost:
			s.batch(w, r, st)
		default:
			w.Header()["Allow"] = hdrAllowSudoku
			s.fail(w, st, methodNotAllowed(r.Method, "GET or POST"), "")
		}
	case "/sudoku/stats":
		if r.Method != http.MethodGet {
			w.Header()["Allow"] = hdrAllowStats
			s.fail(w, st, methodNotAllowed(r.Method, "GET"), "")
			return
		}
		s.serveStats(w, st, now)
	default:
		s.fail(w, st, errNotFound, "")
	}
}

func (s *Service) getBuf() *[]byte { return s.bufs.Get().(*[]byte) }

func (s *Service) putBuf(b *[]byte) {
	if cap(*b) <= 64<<10 {
		*b = (*b)[:0]
		s.bufs.Put(b)
	}
}

// write sends a complete response with explicit Content-Type and
// Content-Length (golang/go#40928).
func (s *Service) write(w http.ResponseWriter, st *reqState, status int, ctype []string, body []byte) {
	h := w.Header()
	h["Content-Type"] = ctype
	if n := len(body); n < len(smallLengths) {
		h["Content-Length"] = smallLengths[n]
	} else {
		h["Content-Length"] = []string{strconv.Itoa(n)}
	}
	h["X-Sudoku-Worker"] = s.hdrWorker
	h["Cache-Control"] = hdrNoStore
	h["Date"] = s.dateHeader(time.Now())
	if status == http.StatusServiceUnavailable {
		h["Retry-After"] = hdrRetryAfter
	}
	st.status, st.wrote = status, true
	w.WriteHeader(status)
	w.Write(body)
}

// fail answers a request that went wrong with its JSON error: classify
// gives the outcome, the status and the message; id is echoed when set.
func (s *Service) fail(w http.ResponseWriter, st *reqState, err error, id string) {
	o, msg := s.classify(err)
	st.outcome, st.errMsg = o, msg
	bp := s.getBuf()
	*bp = appendError(*bp, msg, id)
	s.write(w, st, outcomeStatus[o], hdrJSON, *bp)
	s.putBuf(bp)
}

// wantsText reports whether a GET is answered in text: format=text, or no
// format and an Accept header that asks for text/plain.
func wantsText(r *http.Request, req *getRequest) bool {
	if req.format {
		return req.text
	}
	a := r.Header["Accept"]
	return len(a) > 0 && strings.HasPrefix(a[0], "text/plain")
}

// solveOne runs one puzzle on the pool with its own deadline (net/http/fcgi
// never cancels a request, so for a GET the deadline is the only bound).
// parent bounds the wait and the solve too: a batch passes its own context,
// which ends at the batch deadline or when its client is gone; a GET passes
// context.Background() and gets a pooled, allocation-free deadline.
// A puzzle without a solution is errNoSolution; any error after parent
// ended wraps errBatchEnded.
func (s *Service) solveOne(parent context.Context, g solver.Grid, limit int) (res solver.Result, wait, took time.Duration, err error) {
	res, wait, took, err = s.solveSlot(parent, g, limit)
	switch {
	case err != nil && parent.Err() != nil:
		err = fmt.Errorf("%w: %w", errBatchEnded, err)
	case err == nil && res.Count == 0:
		err = errNoSolution
	}
	return res, wait, took, err
}

func (s *Service) solveSlot(parent context.Context, g solver.Grid, limit int) (res solver.Result, wait, took time.Duration, err error) {
	wait, err = s.pool.acquire(parent)
	s.m.queueSeconds.Observe(wait.Seconds())
	if err != nil {
		return res, wait, 0, err
	}
	defer s.pool.release()
	t0 := time.Now()
	if parent.Done() == nil {
		ctx := newDeadlineCtx(t0.Add(s.cfg.SolveTimeout))
		res, err = s.solve(ctx, g, limit)
		releaseDeadlineCtx(ctx)
	} else {
		ctx, cancel := context.WithDeadline(parent, t0.Add(s.cfg.SolveTimeout))
		res, err = s.solve(ctx, g, limit)
		cancel()
	}
	took = time.Since(t0)
	s.m.solveSeconds.Observe(took.Seconds())
	return res, wait, took, err
}

func (s *Service) get(w http.ResponseWriter, r *http.Request, st *reqState) {
	req, err := parseGet(r.URL.RawQuery)
	if err != nil {
		s.fail(w, st, err, req.id)
		return
	}
	limit := 1
	if req.unique {
		limit = 2
	}
	res, wait, took, err := s.solveOne(context.Background(), req.grid, limit)
	st.queueWait, st.solve = wait, took
	if err != nil {
		s.fail(w, st, err, req.id)
		return
	}
	st.outcome = outcomeSolved
	bp := s.getBuf()
	if wantsText(r, &req) {
		b := *bp
		if req.id != "" {
			b = append(b, req.id...)
			b = append(b, ':')
		}
		b = appendGrid(b, &res.Solution)
		*bp = append(b, '\n')
		s.write(w, st, http.StatusOK, hdrText, *bp)
	} else {
		*bp = appendSolution(*bp, req.id, &req.grid, &res.Solution, res.Count == 1, req.unique)
		s.write(w, st, http.StatusOK, hdrJSON, *bp)
	}
	s.putBuf(bp)
}

// batch answers a POST body of lines "[id:]<81 cells>": every line is solved
// on the pool (at most BatchParallel at once, so one batch cannot take every
// slot from single requests) and answered as soon as it is done, in
// completion order: "[id:]<solution>", "[id:]NoSolution",
// "[id:]ServerTooBusy" or "[id:]error: <what>".
//
// A batch ends early in two ways. net/http/fcgi never cancels r.Context()
// (nginx closes the connection on a client abort and sends no
// FCGI_ABORT_REQUEST), so the only sign that the client is gone is a
// failed write: the connection wrapper fails writes once the peer has
// closed, and the first failed write or flush cancels the batch, which
// stops the solves in flight and leaves the lines not yet started
// unsolved. And BatchTimeout bounds the whole batch: lines not answered by
// then are answered ServerTooBusy without being solved.
func (s *Service) batch(w http.ResponseWriter, r *http.Request, st *reqState) {
	lines, err := s.readBatch(r)
	if err != nil {
		s.fail(w, st, err, "")
		return
	}

	h := w.Header()
	h["Content-Type"] = hdrText
	h["X-Sudoku-Worker"] = s.hdrWorker
	h["Cache-Control"] = hdrNoStore
	h["X-Accel-Buffering"] = hdrNo // nginx passes lines on as they come
	h["Date"] = s.dateHeader(time.Now())
	st.status, st.wrote, st.outcome = http.StatusOK, true, outcomeBatch
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// Send the header now (net/http/fcgi writes it on the first Write,
	// even an empty one), so the client sees the answer start.
	w.Write(nil)
	flush(w, rc)

	ctx, gone := context.WithCancelCause(r.Context())
	defer gone(nil)
	ctx, stop := context.WithTimeoutCause(ctx, s.cfg.BatchTimeout, errBatchDeadline)
	defer stop()

	par := min(s.cfg.BatchParallel, len(lines))
	jobs := make(chan int, len(lines))
	for i := range lines {
		jobs <- i
	}
	close(jobs)
	results := make(chan []byte, len(lines))
	var wg sync.WaitGroup
	var waited atomic.Int64
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if ctx.Err() != nil {
					if errors.Is(context.Cause(ctx), errClientGone) {
						continue // nobody reads the answer: drop the line
					}
					results <- s.busyLine(lines[i])
					continue
				}
				results <- s.safeBatchLine(ctx, lines[i], &waited)
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()

	bp := s.getBuf()
	out := *bp
	var werr error
	for line := range results {
		if werr != nil {
			continue // client gone: let the workers wind down
		}
		out = append(out, line...)
		if len(results) == 0 || len(out) > 32<<10 {
			_, werr = w.Write(out)
			out = out[:0]
			if werr == nil && len(results) == 0 {
				werr = flush(w, rc)
			}
			if werr != nil {
				gone(fmt.Errorf("%w: %w", errClientGone, werr))
				st.errMsg = "client gone: " + werr.Error()
			}
		}
	}
	if len(out) > 0 && werr == nil {
		w.Write(out)
	}
	*bp = out
	s.putBuf(bp)
	st.queueWait = time.Duration(waited.Load())
}

var (
	errClientGone    = errors.New("fcgi: batch client gone")
	errBatchDeadline = errors.New("fcgi: batch deadline passed")
	errEmptyBatch    = badRequest("empty batch: send lines [id:]<81 cells>")
)

// readBatch reads a POST body within the size limits and returns its
// puzzle lines, without blank lines and # comments.
func (s *Service) readBatch(r *http.Request) ([][]byte, error) {
	limit := s.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, tooLarge(fmt.Sprintf("body is %d bytes, limit %d", r.ContentLength, limit))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, badRequest("reading body: " + err.Error())
	}
	if int64(len(body)) > limit {
		return nil, tooLarge(fmt.Sprintf("body is over the %d-byte limit", limit))
	}
	lines := make([][]byte, 0, bytes.Count(body, []byte{'\n'})+1)
	for len(body) > 0 {
		var line []byte
		line, body, _ = bytes.Cut(body, []byte{'\n'})
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if len(lines) == s.cfg.MaxBatchLines {
			return nil, tooLarge(fmt.Sprintf("more than %d puzzle lines", s.cfg.MaxBatchLines))
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return nil, errEmptyBatch
	}
	return lines, nil
}

// flush sends what w holds. Its error is the only sign that a batch's
// client is gone: Serve's writer reports it from Flush; net/http/fcgi's own
// drops it there, keeps it, and returns it from the next (empty) Write.
func flush(w http.ResponseWriter, rc *http.ResponseController) error {
	if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	_, err := w.Write(nil)
	return err
}

// lineID returns the "id:" prefix of a batch line (nil when it has none).
func lineID(line []byte) []byte {
	if i := bytes.LastIndexByte(line, ':'); i >= 0 {
		return line[:i+1]
	}
	return nil
}

// busyLine answers a line the batch had no time left for.
func (s *Service) busyLine(line []byte) []byte {
	return s.lineError(append([]byte(nil), lineID(line)...), errBatchEnded)
}

// lineError counts a batch line that did not solve and appends its answer
// to out, which holds the line's "id:" prefix.
func (s *Service) lineError(out []byte, err error) []byte {
	o, msg := s.classify(err)
	s.recordLine(o)
	out = append(out, o.batchAnswer(msg)...)
	return append(out, '\n')
}

// safeBatchLine is batchLine with panic recovery: the line gets an error
// answer and the process goes on.
func (s *Service) safeBatchLine(ctx context.Context, line []byte, waited *atomic.Int64) (out []byte) {
	defer func() {
		if p := recover(); p != nil {
			s.m.panics.Inc()
			s.log.Error().Str("panic", fmt.Sprint(p)).Bytes("stack", stack()).Msg("batch line panic")
			out = s.lineError(nil, errPanic)
		}
	}()
	return s.batchLine(ctx, line, waited)
}

// batchLine solves one line within the batch's ctx and returns the answer
// line.
func (s *Service) batchLine(ctx context.Context, line []byte, waited *atomic.Int64) []byte {
	var id, puzzle []byte
	if i := bytes.LastIndexByte(line, ':'); i >= 0 {
		id, puzzle = line[:i], line[i+1:]
	} else {
		puzzle = line
	}
	out := make([]byte, 0, len(id)+1+81+1)
	if len(id) > 0 {
		out = append(out, id...)
		out = append(out, ':')
	}
	res, err := s.solveLine(ctx, id, puzzle, waited)
	if err != nil {
		return s.lineError(out, err)
	}
	s.recordLine(outcomeSolved)
	out = appendGrid(out, &res.Solution)
	return append(out, '\n')
}

func (s *Service) solveLine(ctx context.Context, id, puzzle []byte, waited *atomic.Int64) (solver.Result, error) {
	if err := checkID(string(id)); err != nil {
		return solver.Result{}, err
	}
	g, err := solver.Parse(string(puzzle))
	if err != nil {
		return solver.Result{}, err
	}
	res, wait, _, err := s.solveOne(ctx, g, 1)
	waited.Add(int64(wait))
	return res, err
}

func (s *Service) recordLine(o outcome) {
	s.stats.recordLine(o)
	s.m.linesByResult[o].Inc()
}
