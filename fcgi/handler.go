package fcgi

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"sudoku-fcgi/cmd/contract"
	"sudoku-fcgi/fcgi/fcgiserver"
	"sudoku-fcgi/solver"
)

// Config sets the service's limits. DefaultConfig gives the defaults; a
// zero field means zero (none, or a budget that is always exceeded) except
// where its comment says otherwise.
type Config struct {
	WorkerID      string        // X-Sudoku-Worker header and stats
	PoolSize      int           // solver slots; 0 means GOMAXPROCS
	QueueSize     int           // puzzles that may wait for a slot; 0: none
	QueueTimeout  time.Duration // longest wait for a slot (refused at once when the expected wait is over half)
	SolveTimeout  time.Duration // budget for one solve
	MaxBatchLines int           // lines in one POST
	MaxBodyBytes  int64         // POST body size
	BatchParallel int           // puzzles of one batch solved at once; 0 means PoolSize
	BatchTimeout  time.Duration // deadline of one POST batch
	AccessLog     bool          // one info line per request
	// OpenConns reports the open FastCGI connections for the stats page
	// (fastcgi_connections); nil reports 0.
	OpenConns func() int64
}

// DefaultConfig returns the configuration the worker runs with unless told
// otherwise; the command's flags take their defaults from it. The times
// and the body limit that nginx must allow for are the contract's.
func DefaultConfig() Config {
	return Config{
		WorkerID:      "sudoku",
		QueueSize:     1024,
		QueueTimeout:  contract.QueueTimeout,
		SolveTimeout:  contract.SolveTimeout,
		MaxBatchLines: 10000,
		MaxBodyBytes:  contract.MaxBodyBytes,
		BatchTimeout:  contract.BatchTimeout,
		AccessLog:     true,
	}
}

// resolve gives PoolSize and BatchParallel 0 their documented meaning.
func (c Config) resolve() Config {
	if c.PoolSize <= 0 {
		c.PoolSize = runtime.GOMAXPROCS(0)
	}
	if c.BatchParallel <= 0 {
		c.BatchParallel = c.PoolSize
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
	sc    statsCache // the last body of GET /sudoku/stats
	m     *metrics
	solve solveFunc // solver.SolveContext; tests replace it

	draining atomic.Bool
	counts   counts

	bufs sync.Pool
}

// New builds a Service; start cfg from DefaultConfig.
func New(cfg Config, log zerolog.Logger) *Service {
	cfg = cfg.resolve()
	s := &Service{
		cfg:   cfg,
		log:   log,
		pool:  newPool(cfg.PoolSize, cfg.QueueSize, cfg.QueueTimeout),
		solve: solver.SolveContext,
	}
	s.bufs.New = func() any { b := make([]byte, 0, 512); return &b }
	s.m = newMetrics(s.pool, s.draining.Load)
	s.stats = newStats(time.Now(), s.m.requestSeconds)
	return s
}

// Config returns the configuration in force (PoolSize and BatchParallel
// resolved).
func (s *Service) Config() Config { return s.cfg }

var _ prometheus.Collector = (*Service)(nil)

// Describe implements prometheus.Collector: the service's requests,
// latencies, pool and drain state.
func (s *Service) Describe(ch chan<- *prometheus.Desc) {
	s.m.describe(ch)
}

// Collect implements prometheus.Collector.
func (s *Service) Collect(ch chan<- prometheus.Metric) {
	s.m.collect(ch, &s.counts)
}

// SetDraining switches the service into (or out of) draining: /readyz
// fails and new public requests get 503. The FastCGI server's OnDrain
// calls it.
func (s *Service) SetDraining(v bool) { s.draining.Store(v) }

// The Content-Types of the public answers.
const (
	typeJSON = "application/json"
	typeText = "text/plain; charset=utf-8"
)

// reqState is what one request leaves for the access line and the stats.
type reqState struct {
	status    int
	outcome   outcome
	route     route
	queueWait time.Duration
	solve     time.Duration
	wrote     bool
	head      bool // a HEAD request: the GET's header without its body
	errMsg    string
}

// ServeHTTP is the public handler: routing, panic recovery, the
// X-Sudoku-Worker header, stats, metrics and the access line.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if reason, ok := fcgiserver.MalformedReason(r); ok {
		s.serveMalformed(w, reason)
		return
	}
	start := time.Now()
	s.counts.inFlight.Add(1)
	st := reqState{head: r.Method == http.MethodHead}
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
	s.counts.inFlight.Add(-1)
	s.account(r, st, end, d)
}

// account records a finished request in the request histogram (through
// stats) and the counts and writes its access line; r is nil for a
// request net/http/fcgi could not parse.
func (s *Service) account(r *http.Request, st *reqState, end time.Time, d time.Duration) {
	s.stats.record(end, d)
	s.counts.requests[st.route][st.outcome].Add(1)
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

// serveMalformed answers a request net/http/fcgi could not turn into an
// *http.Request (a bad Host, request URI or Content-Length) with a JSON
// 400 and counts it; reason is the child's error. The FastCGI server
// counts it too, as sudoku_fastcgi_malformed_requests_total.
func (s *Service) serveMalformed(w http.ResponseWriter, reason string) {
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
		case http.MethodGet, http.MethodHead:
			st.route = routeGet
			s.get(w, r, st)
		case http.MethodPost:
			st.route = routeBatch
			s.batch(w, r, st)
		default:
			w.Header().Set("Allow", "GET, HEAD, POST")
			s.fail(w, st, methodNotAllowed(r.Method, "GET, HEAD or POST"), "")
		}
	case "/sudoku/stats":
		st.route = routeStats
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			s.fail(w, st, methodNotAllowed(r.Method, "GET or HEAD"), "")
			return
		}
		s.serveStats(w, st, now)
	default:
		s.fail(w, st, errNotFound, "")
	}
}

// getBuf and putBuf pool the buffers answers are built in.
func (s *Service) getBuf() *[]byte { return s.bufs.Get().(*[]byte) }

func (s *Service) putBuf(b *[]byte) {
	if cap(*b) <= 64<<10 {
		*b = (*b)[:0]
		s.bufs.Put(b)
	}
}

// setCommon sets the header fields every public answer carries.
// X-Content-Type-Options: nosniff keeps a browser to the Content-Type.
func (s *Service) setCommon(h http.Header) {
	h.Set("X-Sudoku-Worker", s.cfg.WorkerID)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
}

// write sends a complete response with explicit Content-Type and
// Content-Length (golang/go#40928). net/http/fcgi adds the Date.
func (s *Service) write(w http.ResponseWriter, st *reqState, status int, ctype string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	s.setCommon(h)
	if status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "1")
	}
	st.status, st.wrote = status, true
	w.WriteHeader(status)
	if !st.head {
		w.Write(body)
	}
}

// fail answers a request that went wrong with its JSON error: classify
// gives the outcome, the status and the message; id is echoed when set.
func (s *Service) fail(w http.ResponseWriter, st *reqState, err error, id string) {
	o, msg := s.classify(err)
	st.outcome, st.errMsg = o, msg
	bp := s.getBuf()
	*bp = appendError(*bp, msg, id)
	s.write(w, st, outcomeStatus[o], typeJSON, *bp)
	s.putBuf(bp)
}

// wantsText reports whether a GET is answered in text: format=text, or no
// format and an Accept header that asks for text/plain.
func wantsText(r *http.Request, req *getRequest) bool {
	if req.format != "" {
		return req.format == "text"
	}
	a := r.Header["Accept"]
	return len(a) > 0 && strings.HasPrefix(a[0], "text/plain")
}

// solveOne runs one puzzle on the pool with its own deadline (net/http/fcgi
// never cancels a request, so for a GET the deadline is the only bound).
// parent bounds the wait and the solve too: a batch passes its own context,
// which ends at the batch deadline or when its client is gone; a GET passes
// context.Background().
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
	ctx, cancel := context.WithDeadline(parent, t0.Add(s.cfg.SolveTimeout))
	res, err = s.solve(ctx, g, limit)
	cancel()
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
		// The text answer says " unique" or " not-unique" when the client
		// asked (unique=1), so that text loses nothing JSON says.
		b := solver.AppendID(*bp, []byte(req.id), req.id != "")
		b = solver.AppendSolution(b, &res.Solution, req.unique, res.Count)
		*bp = append(b, '\n')
		s.write(w, st, http.StatusOK, typeText, *bp)
	} else {
		*bp = appendSolution(*bp, req.id, &req.grid, &res.Solution, res.Count == 1, req.unique)
		s.write(w, st, http.StatusOK, typeJSON, *bp)
	}
	s.putBuf(bp)
}
