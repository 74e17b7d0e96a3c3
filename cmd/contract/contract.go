// Package contract holds what the two binaries must agree on: the worker
// (sudoku-fcgi) and the edge (sudoku-edge, which renders nginx's
// configuration). Each side takes its defaults from here, so neither
// restates the other's values, and TestAgreements checks the inequalities
// that tie them together.
//
// It imports the standard library only: the edge links it without the
// worker's handler or the solver, and the worker without the edge.
package contract

import "time"

// The worker's answer times. A GET waits at most QueueTimeout for a solver
// slot and then solves within SolveTimeout (503 past either); a batch POST
// ends at BatchTimeout, the lines left answered ServerTooBusy.
const (
	QueueTimeout = 200 * time.Millisecond
	SolveTimeout = time.Second
	BatchTimeout = 30 * time.Second
)

// nginx's fastcgi_read_timeout of a GET and of a batch POST. They exceed
// the worker's answer times, so that nginx never gives up on a live worker
// and retries a slow but healthy GET; the margins cover the answer's way
// back and a worker's GC pause.
const (
	ReadTimeout      = QueueTimeout + SolveTimeout + 300*time.Millisecond
	BatchReadTimeout = BatchTimeout + 5*time.Second
)

// MaxBodyBytes is the largest POST body, for the worker (413 above it) and
// for nginx (client_max_body_size), so that nginx holds no body in memory
// that the worker would then refuse.
const MaxBodyBytes = 1 << 20

// ResolveInterval is how often the edge resolves and probes the workers.
// A worker that starts to refuse (it drains) is seen by the next round,
// whose probe takes at most one interval: it is out of the upstream within
// two.
const ResolveInterval = time.Second

// DrainLinger is how long a draining worker stays up with its listener
// closed, refusing: two resolve intervals, so that the edge drops it while
// its address still refuses rather than after it vanishes under nginx.
const DrainLinger = 2 * ResolveInterval

// SocketName reports whether name can name a worker's unix socket file:
// the worker makes <id>.sock only for such a name, and the edge lists only
// such files and pastes their paths into nginx's configuration as they
// are. It takes ASCII letters, digits, '.', '_' and '-', and no leading
// '.' (a hidden file).
func SocketName(name string) bool {
	if name == "" || name[0] == '.' {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
