// Package fcgi is the Sudoku worker's service: the HTTP handler that nginx
// reaches over FastCGI (Service, an http.Handler), the bounded solver pool
// behind it, request statistics, and the Prometheus metrics of all of it
// (the Service is a prometheus.Collector), plus the internal health and
// metrics mux. Serving it over FastCGI is the job of fcgi/fcgiserver, which
// knows nothing of Sudoku; cmd/sudoku-fcgi wires the two.
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
