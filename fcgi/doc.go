// Package fcgi is the Sudoku worker: the HTTP handler that nginx reaches over
// FastCGI (Service), the bounded solver pool behind it, request statistics,
// Prometheus metrics and the internal health/metrics mux; and Serve, which
// runs the standard library's net/http/fcgi child for any http.Handler with
// what the child lacks: a connection limit, bounded per-connection state,
// buffered reads and coalesced writes, a Flush that reaches the socket, an
// answer of the handler's choosing for requests the child cannot parse, and
// a graceful drain. Serve knows nothing of the Service: cmd/sudoku-fcgi
// wires the two through ServeOptions.
//
// Public routes (through nginx):
//
//	GET  /sudoku?puzzle=<81 cells>[&id=<id>][&unique=1][&format=text]
//	POST /sudoku        (body: lines "[id:]<81 cells>"; streamed answers)
//	GET  /sudoku/stats  (JSON)
//
// Every failure is classified once into an outcome, which gives its HTTP
// status and its batch answer. Errors are JSON {"error": "...", "id": "..."}:
// 400 malformed, 405 wrong method, 404 other paths, 413 batch too large, 422
// no solution, 503 pool busy, solve budget exceeded or draining (with
// Retry-After), 500 only for a fault in the worker itself (an unexpected
// error or a recovered panic, logged at error level).
//
// The package never reads the environment and keeps no globals; the command
// cmd/sudoku-fcgi wires it.
package fcgi
