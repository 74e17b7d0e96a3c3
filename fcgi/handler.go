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
	cfg Config
	log zerolog.Logger
	// peerLog samples the per-peer refusals: a flood would write a line
	// per connection attempt.
	peerLog zerolog.Logger
	pool    *Pool
	stats   *Stats
	m       *Metrics
	solve   solveFunc // solver.SolveContext; tests replace it

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
		peerLog:   log.Sample(&zerolog.BurstSampler{Burst: 1, Period: time.Second}),
		pool:      NewPool(cfg.PoolSize, cfg.QueueSize, cfg.QueueTimeout),
		stats:     NewStats(time.Now()),
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
// fails and new public requests get 503.
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
	outcome   Outcome
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
			s.writeError(w, st, http.StatusInternalServerError, OutcomeInternalError, "internal error", "")
		} else {
			st.status, st.outcome = http.StatusInternalServerError, OutcomeInternalError
		}
	}
	end := time.Now()
	d := end.Sub(start)
	s.inFlight.Add(-1)
	s.m.inFlight.Dec()
	s.stats.Record(st.outcome, end, d)
	s.m.byOutcome[st.outcome].Inc()
	s.m.requestSeconds.Observe(d.Seconds())
	if s.cfg.AccessLog {
		e := s.log.Info()
		if e == nil {
			return
		}
		e.Str("req_id", r.Header.Get("X-Request-Id")).
			Str("method", r.Method).
			Str("path", r.URL.Path).
			Int("status", st.status).
			Str("outcome", st.outcome.String()).
			Dur("duration", d).
			Dur("queue_wait", st.queueWait).
			Dur("solve_duration", st.solve)
		if st.errMsg != "" {
			e.Str("error", st.errMsg)
		}
		e.Msg("request")
	}
}

func stack() []byte {
	b := make([]byte, 4096)
	return b[:runtime.Stack(b, false)]
}

func (s *Service) route(w http.ResponseWriter, r *http.Request, st *reqState, now time.Time) {
	switch r.URL.Path {
	case "/sudoku":
		if s.draining.Load() {
			s.writeError(w, st, http.StatusServiceUnavailable, OutcomeDraining, "worker is shutting down, retry", "")
			return
		}
		switch r.Method {
		case http.MethodGet:
			s.get(w, r, st, now)
		case http.MethodPost:
			s.batch(w, r, st)
		default:
			w.Header()["Allow"] = hdrAllowSudoku
			s.writeError(w, st, http.StatusMethodNotAllowed, OutcomeMethodNotAllowed, "method "+r.Method+" not allowed, use GET or POST", "")
		}
	case "/sudoku/stats":
		if r.Method != http.MethodGet {
			w.Header()["Allow"] = hdrAllowStats
			s.writeError(w, st, http.StatusMethodNotAllowed, OutcomeMethodNotAllowed, "method "+r.Method+" not allowed, use GET", "")
			return
		}
		s.serveStats(w, st, now)
	default:
		s.writeError(w, st, http.StatusNotFound, OutcomeNotFound, "no such path; use /sudoku or /sudoku/stats", "")
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

func (s *Service) writeError(w http.ResponseWriter, st *reqState, status int, o Outcome, msg, id string) {
	st.outcome, st.errMsg = o, msg
	bp := s.getBuf()
	*bp = appendError(*bp, msg, id)
	s.write(w, st, status, hdrJSON, *bp)
	s.putBuf(bp)
}

func wantsText(r *http.Request, format string) bool {
	switch format {
	case "text":
		return true
	case "json":
		return false
	}
	a := r.Header["Accept"]
	return len(a) > 0 && strings.HasPrefix(a[0], "text/plain")
}

// solveOne runs one puzzle on the pool with its own deadline (net/http/fcgi
// never cancels a request, so for a GET the deadline is the only bound).
// parent bounds the wait and the solve too: a batch passes its own context,
// which ends at the batch deadline or when its client is gone; a GET passes
// context.Background() and gets a pooled, allocation-free deadline.
func (s *Service) solveOne(parent context.Context, g solver.Grid, limit int) (res solver.Result, wait, took time.Duration, err error) {
	wait, err = s.pool.Acquire(parent)
	s.m.queueSeconds.Observe(wait.Seconds())
	if err != nil {
		return res, wait, 0, err
	}
	defer s.pool.Release()
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

func (s *Service) get(w http.ResponseWriter, r *http.Request, st *reqState, now time.Time) {
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		s.writeError(w, st, http.StatusBadRequest, OutcomeBadRequest, err.Error(), "")
		return
	}
	if msg := checkID(q.id); msg != "" {
		s.writeError(w, st, http.StatusBadRequest, OutcomeBadRequest, msg, "")
		return
	}
	if !q.hasPuzzle {
		s.writeError(w, st, http.StatusBadRequest, OutcomeBadRequest, "missing query parameter puzzle (81 cells, 0 or . for blanks)", q.id)
		return
	}
	unique, ok := parseBool(q.unique)
	if !ok {
		s.writeError(w, st, http.StatusBadRequest, OutcomeBadRequest, "unique must be 0 or 1", q.id)
		return
	}
	if q.format != "" && q.format != "text" && q.format != "json" {
		s.writeError(w, st, http.StatusBadRequest, OutcomeBadRequest, "format must be json or text", q.id)
		return
	}
	g, err := solver.Parse(q.puzzle)
	if err != nil {
		s.writeError(w, st, http.StatusBadRequest, OutcomeBadRequest, "puzzle: "+err.Error(), q.id)
		return
	}
	limit := 1
	if unique {
		limit = 2
	}
	res, wait, took, err := s.solveOne(context.Background(), g, limit)
	st.queueWait, st.solve = wait, took
	switch {
	case errors.Is(err, ErrBusy):
		s.writeError(w, st, http.StatusServiceUnavailable, OutcomeTooBusy, "server too busy, retry", q.id)
		return
	case errors.Is(err, solver.ErrBudget):
		s.writeError(w, st, http.StatusServiceUnavailable, OutcomeTimeout, "solve took longer than the "+s.cfg.SolveTimeout.String()+" budget", q.id)
		return
	case err != nil:
		panic(fmt.Sprintf("solver: unexpected error: %v", err))
	case res.Count == 0:
		s.writeError(w, st, http.StatusUnprocessableEntity, OutcomeNoSolution, "puzzle has no solution", q.id)
		return
	}
	st.outcome = OutcomeSolved
	bp := s.getBuf()
	if wantsText(r, q.format) {
		b := *bp
		if q.id != "" {
			b = append(b, q.id...)
			b = append(b, ':')
		}
		b = appendGrid(b, &res.Solution)
		*bp = append(b, '\n')
		s.write(w, st, http.StatusOK, hdrText, *bp)
	} else {
		*bp = appendSolution(*bp, q.id, &g, &res.Solution, res.Count == 1, unique)
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
	max := s.cfg.MaxBodyBytes
	if r.ContentLength > max {
		s.writeError(w, st, http.StatusRequestEntityTooLarge, OutcomeTooLarge, fmt.Sprintf("body is %d bytes, limit %d", r.ContentLength, max), "")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		s.writeError(w, st, http.StatusBadRequest, OutcomeBadRequest, "reading body: "+err.Error(), "")
		return
	}
	if int64(len(body)) > max {
		s.writeError(w, st, http.StatusRequestEntityTooLarge, OutcomeTooLarge, fmt.Sprintf("body is over the %d-byte limit", max), "")
		return
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
			s.writeError(w, st, http.StatusRequestEntityTooLarge, OutcomeTooLarge, fmt.Sprintf("more than %d puzzle lines", s.cfg.MaxBatchLines), "")
			return
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		s.writeError(w, st, http.StatusBadRequest, OutcomeBadRequest, "empty batch: send lines [id:]<81 cells>", "")
		return
	}

	h := w.Header()
	h["Content-Type"] = hdrText
	h["X-Sudoku-Worker"] = s.hdrWorker
	h["Cache-Control"] = hdrNoStore
	h["X-Accel-Buffering"] = hdrNo // nginx passes lines on as they come
	h["Date"] = s.dateHeader(time.Now())
	st.status, st.wrote, st.outcome = http.StatusOK, true, OutcomeBatch
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	// Send the header now (net/http/fcgi writes it on the first Write,
	// even an empty one), so the client sees the answer start.
	w.Write(nil)
	if flusher != nil {
		flusher.Flush()
	}

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
			if werr == nil && flusher != nil && len(results) == 0 {
				// Flush drops its error; net/http/fcgi's writer keeps it
				// and an empty Write returns it.
				flusher.Flush()
				_, werr = w.Write(nil)
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
)

// lineID returns the "id:" prefix of a batch line (nil when it has none).
func lineID(line []byte) []byte {
	if i := bytes.LastIndexByte(line, ':'); i >= 0 {
		return line[:i+1]
	}
	return nil
}

// busyLine answers a line the batch had no time left for.
func (s *Service) busyLine(line []byte) []byte {
	s.recordLine(OutcomeTooBusy)
	return append(append([]byte(nil), lineID(line)...), "ServerTooBusy\n"...)
}

// safeBatchLine is batchLine with panic recovery: the line gets an error
// answer and the process goes on.
func (s *Service) safeBatchLine(ctx context.Context, line []byte, waited *atomic.Int64) (out []byte) {
	defer func() {
		if p := recover(); p != nil {
			s.m.panics.Inc()
			s.log.Error().Str("panic", fmt.Sprint(p)).Bytes("stack", stack()).Msg("batch line panic")
			s.recordLine(OutcomeInternalError)
			out = []byte("error: internal error\n")
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
	if msg := checkID(string(id)); msg != "" {
		s.recordLine(OutcomeBadRequest)
		return append(append(out, "error: "...), msg+"\n"...)
	}
	g, err := solver.Parse(string(puzzle))
	if err != nil {
		s.recordLine(OutcomeBadRequest)
		out = append(out, "error: "...)
		out = append(out, err.Error()...)
		return append(out, '\n')
	}
	res, wait, _, err := s.solveOne(ctx, g, 1)
	waited.Add(int64(wait))
	switch {
	case errors.Is(err, ErrBusy), err != nil && ctx.Err() != nil:
		// No slot in time, or the batch ended (deadline or client gone)
		// before or while this line was solved.
		s.recordLine(OutcomeTooBusy)
		return append(out, "ServerTooBusy\n"...)
	case errors.Is(err, solver.ErrBudget):
		s.recordLine(OutcomeTimeout)
		return append(out, "error: solve budget exceeded\n"...)
	case err != nil:
		s.recordLine(OutcomeInternalError)
		return append(out, "error: internal error\n"...)
	case res.Count == 0:
		s.recordLine(OutcomeNoSolution)
		return append(out, "NoSolution\n"...)
	}
	s.recordLine(OutcomeSolved)
	out = appendGrid(out, &res.Solution)
	return append(out, '\n')
}

func (s *Service) recordLine(o Outcome) {
	s.stats.RecordLine(o)
	s.m.linesByResult[o].Inc()
}
