// Package fcgi is the Sudoku worker: the HTTP handler that nginx reaches over
// FastCGI, the bounded solver pool behind it, request statistics, Prometheus
// metrics, the internal health/metrics mux, and Serve, which runs the
// standard library's net/http/fcgi child with what it lacks: a connection
// limit, bounded per-connection state, buffered reads and coalesced writes,
// panic recovery, a clean 400 for requests the child cannot parse, and a
// graceful drain.
//
// Public routes (through nginx):
//
//	GET  /sudoku?puzzle=<81 cells>[&id=<id>][&unique=1][&format=text]
//	POST /sudoku        (body: lines "[id:]<81 cells>"; streamed answers)
//	GET  /sudoku/stats  (JSON)
//
// Errors are JSON {"error": "...", "id": "..."}: 400 malformed, 405 wrong
// method, 404 other paths, 413 batch too large, 422 no solution, 503 pool
// busy, solve budget exceeded or draining (with Retry-After), 500 only for a
// fault in the worker itself (a recovered panic).
//
// The package never reads the environment and keeps no globals; the command
// cmd/sudoku-fcgi wires it.
package fcgi
