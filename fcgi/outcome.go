package fcgi

import (
	"errors"

	"sudoku-fcgi/solver"
)

// outcome classifies a finished request or batch line. Every error on a
// request's path becomes one through classify; the HTTP status and the
// batch answer follow from it.
type outcome uint8

// Outcomes, in the order they appear in stats and metrics.
const (
	outcomeSolved outcome = iota
	outcomeNoSolution
	outcomeBadRequest
	outcomeTooBusy
	outcomeTimeout
	outcomeDraining
	outcomeNotFound
	outcomeMethodNotAllowed
	outcomeTooLarge
	outcomeStats
	outcomeBatch
	outcomeInternalError
	numOutcomes
)

var outcomeNames = [numOutcomes]string{
	"solved", "no_solution", "bad_request", "too_busy", "timeout", "draining",
	"not_found", "method_not_allowed", "too_large", "stats", "batch", "internal_error",
}

// metricOutcome is the outcome as the requests_total metric names it: the
// route is a label of its own there, so a batch or stats request that was
// answered is "ok".
func (o outcome) metricOutcome() string {
	if o == outcomeStats || o == outcomeBatch {
		return "ok"
	}
	return o.String()
}

// metricLabel is the outcome whose label o shares in requests_total.
func (o outcome) metricLabel() outcome {
	if o == outcomeBatch {
		return outcomeStats
	}
	return o
}

// route is the part of the API a request asked for, the route label of
// requests_total.
type route uint8

const (
	routeOther route = iota // any other path, and requests nginx-side parsing failed
	routeGet
	routeBatch
	routeStats
	numRoutes
)

var routeNames = [numRoutes]string{"other", "get", "batch", "stats"}

func (o outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return "unknown"
}

// outcomeStatus is the HTTP status of each outcome. A solve over its budget
// is 503, not 504, which is nginx's own upstream timeout.
var outcomeStatus = [numOutcomes]int{
	outcomeSolved:           200,
	outcomeNoSolution:       422,
	outcomeBadRequest:       400,
	outcomeTooBusy:          503,
	outcomeTimeout:          503,
	outcomeDraining:         503,
	outcomeNotFound:         404,
	outcomeMethodNotAllowed: 405,
	outcomeTooLarge:         413,
	outcomeStats:            200,
	outcomeBatch:            200,
	outcomeInternalError:    500,
}

// appendBatchAnswer appends what a batch line that did not solve answers,
// after its "id:" prefix; msg is the message classify gave.
func (o outcome) appendBatchAnswer(dst []byte, msg string) []byte {
	switch o {
	case outcomeNoSolution:
		return append(dst, solver.AnswerNoSolution...)
	case outcomeTooBusy, outcomeDraining:
		return append(dst, solver.AnswerTooBusy...)
	case outcomeTimeout:
		return solver.AppendError(dst, "solve budget exceeded")
	case outcomeInternalError:
		return solver.AppendError(dst, "internal error")
	}
	return solver.AppendError(dst, msg)
}

// A requestError is a failure with its outcome and the message the client
// reads.
type requestError struct {
	outcome outcome
	msg     string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(msg string) error { return &requestError{outcomeBadRequest, msg} }

func tooLarge(msg string) error { return &requestError{outcomeTooLarge, msg} }

func methodNotAllowed(method, use string) error {
	return &requestError{outcomeMethodNotAllowed, "method " + method + " not allowed, use " + use}
}

var (
	errNoSolution    = &requestError{outcomeNoSolution, "puzzle has no solution"}
	errDraining      = &requestError{outcomeDraining, "worker is shutting down, retry"}
	errNotFound      = &requestError{outcomeNotFound, "no such path; use /sudoku or /sudoku/stats"}
	errMalformed     = &requestError{outcomeBadRequest, "malformed request: invalid Host header, request URI or Content-Length"}
	errMissingPuzzle = badRequest("missing query parameter puzzle (81 cells, 0 or . for blanks)")
	// errPanic is a recovered panic, already logged with its stack.
	errPanic = &requestError{outcomeInternalError, "internal error"}
	// errBatchEnded wraps what a solve returns after its batch ended
	// (deadline or client gone): the line had no time, not a fault.
	errBatchEnded = errors.New("fcgi: batch ended")
)

// classify maps an error met while answering to its outcome and the message
// for the client. It is the only place that decides: the GET path, the batch
// lines and the recovery from a panic all go through it. Only an error it
// does not know (a fault in the worker) is logged, at error level.
func (s *Service) classify(err error) (outcome, string) {
	var re *requestError
	switch {
	case errors.As(err, &re):
		return re.outcome, re.msg
	case errors.Is(err, errBusy), errors.Is(err, errBatchEnded):
		return outcomeTooBusy, "server too busy, retry"
	case errors.Is(err, solver.ErrBudget):
		return outcomeTimeout, "solve took longer than the " + s.cfg.SolveTimeout.String() + " budget"
	case errors.Is(err, solver.ErrInvalid):
		return outcomeBadRequest, err.Error()
	}
	s.log.Error().Err(err).Msg("unexpected error")
	return outcomeInternalError, "internal error"
}
