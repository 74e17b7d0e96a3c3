// Package cli is what every command of the project shares at its edge: flags
// with environment twins, a -help that shows both, a -version flag, the
// splitting of list flags (SplitList), the internal HTTP listeners
// (ServeHTTP), a server's runtime and log settings (Runtime), and the main
// that turns signals into a context and errors into exit codes.
//
// A flag's twin is the command's name and the flag's name in upper case with
// '-' as '_': sudoku-edge's -max-conns-per-worker is $SUDOKU_EDGE_MAX_CONNS_PER_WORKER.
// A flag on the command line wins over its variable; a variable's value goes
// through the flag's own Set, so it is checked exactly as the flag would be.
//
// The lab's programs under tests/ (herd, reliability) are commands too and
// use it, so it is not below cmd/internal, which Go admits only from cmd/.
// No product package imports it (cmd/imports_test.go).
package cli
