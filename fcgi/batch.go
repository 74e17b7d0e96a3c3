package fcgi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"sudoku-fcgi/solver"
)

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
//
// With unique=1 in the query every solved line says whether its solution
// is unique: "[id:]<solution> unique" or "[id:]<solution> not-unique".
func (s *Service) batch(w http.ResponseWriter, r *http.Request, st *reqState) {
	var run batchRun
	var err error
	if run.unique, err = parseBatchQuery(r.URL.RawQuery); err != nil {
		s.fail(w, st, err, "")
		return
	}
	lines, err := s.readBatch(r)
	if err != nil {
		s.fail(w, st, err, "")
		return
	}

	h := w.Header()
	h.Set("Content-Type", typeText)
	s.setCommon(h)
	h.Set("X-Accel-Buffering", "no") // nginx passes lines on as they come
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
				results <- s.safeBatchLine(ctx, lines[i], &run)
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
	st.queueWait = time.Duration(run.waited.Load())
}

// batchRun is what the lines of one batch share.
type batchRun struct {
	unique bool         // unique=1: solve each line for two solutions
	waited atomic.Int64 // queue wait of all lines, in nanoseconds
}

var (
	errClientGone    = errors.New("fcgi: batch client gone")
	errBatchDeadline = errors.New("fcgi: batch deadline passed")
	errEmptyBatch    = badRequest("empty batch: send lines [id:]<81 cells>")
)

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

// busyLine answers a line the batch had no time left for.
func (s *Service) busyLine(line []byte) []byte {
	id, _, hasID := solver.SplitLine(line)
	return s.lineError(solver.AppendID(nil, id, hasID), errBatchEnded)
}

// lineError counts a batch line that did not solve and appends its answer
// to out, which holds the line's "id:" prefix.
func (s *Service) lineError(out []byte, err error) []byte {
	o, msg := s.classify(err)
	s.recordLine(o)
	out = o.appendBatchAnswer(out, msg)
	return append(out, '\n')
}

// safeBatchLine is batchLine with panic recovery: the line gets an error
// answer and the process goes on.
func (s *Service) safeBatchLine(ctx context.Context, line []byte, run *batchRun) (out []byte) {
	defer func() {
		if p := recover(); p != nil {
			s.m.panics.Inc()
			s.log.Error().Str("panic", fmt.Sprint(p)).Bytes("stack", stack()).Msg("batch line panic")
			out = s.lineError(nil, errPanic)
		}
	}()
	return s.batchLine(ctx, line, run)
}

// batchLine solves one line within the batch's ctx and returns the answer
// line. A line with a ':' has an id, possibly empty, and its answer repeats
// "id:" as sent (see solver.SplitLine), so ":<cells>" answers ":<answer>".
func (s *Service) batchLine(ctx context.Context, line []byte, run *batchRun) []byte {
	id, puzzle, hasID := solver.SplitLine(line)
	out := make([]byte, 0, len(id)+1+81+1+len(solver.WordNotUnique)+1)
	out = solver.AppendID(out, id, hasID)
	res, err := s.solveLine(ctx, id, puzzle, run)
	if err != nil {
		return s.lineError(out, err)
	}
	s.recordLine(outcomeSolved)
	out = solver.AppendSolution(out, &res.Solution, run.unique, res.Count)
	return append(out, '\n')
}

func (s *Service) solveLine(ctx context.Context, id, puzzle []byte, run *batchRun) (solver.Result, error) {
	if err := checkID(string(id)); err != nil {
		return solver.Result{}, err
	}
	g, err := solver.Parse(string(puzzle))
	if err != nil {
		return solver.Result{}, err
	}
	limit := 1
	if run.unique {
		limit = 2
	}
	res, wait, _, err := s.solveOne(ctx, g, limit)
	run.waited.Add(int64(wait))
	return res, err
}

func (s *Service) recordLine(o outcome) {
	s.counts.lines[o].Add(1)
}
