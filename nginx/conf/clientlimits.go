package conf

import (
	"bytes"
	"fmt"

	"sudoku-fcgi/cmd/contract"
)

// ClientLimits are nginx's limits on each client address, and on the batch
// bodies it holds for all clients together. sudoku-edge renders them at
// start into client-limits.conf (http level: the rates, the body size, the
// RateLimit-Policy of a 429), route-limits.conf (/sudoku and /sudoku/stats)
// and batch-limits.conf (the batch POST). Past a client's rate or count
// nginx answers 429 (503 on the batch route, whose count of all clients'
// bodies is the service's: nginx has one status per location), at once,
// before any solve (nginx/README.md, "Rate limits").
type ClientLimits struct {
	Rate     int // requests a second per client (GET and POST together)
	Burst    int // requests above Rate a client may send at once, never delayed
	InFlight int // requests per client at once

	BatchRate     int // batch POSTs a second per client
	BatchBurst    int // batch POSTs above BatchRate at once
	BatchInFlight int // batch POSTs per client at once
	// BatchBodies is the batch POSTs at once for all clients together:
	// nginx holds each body in memory (up to MaxBody) until a worker has it.
	BatchBodies int
	// MaxBody is the largest batch body in bytes (client_max_body_size,
	// 413 past it), all of it in one memory buffer.
	MaxBody int64
}

// DefaultClientLimits are what sudoku-edge runs with: a client's rate is a
// small part of the stack's capacity, 2 batches at once are what the web
// page sends, and MaxBody is the worker's own limit (contract.MaxBodyBytes),
// so nginx holds no body the worker would refuse: 64 bodies fit in 64 MiB.
var DefaultClientLimits = ClientLimits{
	Rate: 100, Burst: 200, InFlight: 64,
	BatchRate: 20, BatchBurst: 40, BatchInFlight: 4, BatchBodies: 64,
	MaxBody: contract.MaxBodyBytes,
}

// Check reports a limit nginx would refuse or that turns every client
// away: rates, counts and the body size must be at least 1, bursts at
// least 0.
func (l ClientLimits) Check() error {
	if l.Rate < 1 || l.InFlight < 1 || l.BatchRate < 1 || l.BatchInFlight < 1 || l.BatchBodies < 1 || l.MaxBody < 1 {
		return fmt.Errorf("%w: client limits %+v: rates, counts and the body size must be at least 1", ErrUnsafe, l)
	}
	if l.Burst < 0 || l.BatchBurst < 0 {
		return fmt.Errorf("%w: client limits %+v: bursts must be at least 0", ErrUnsafe, l)
	}
	return nil
}

// renderClientLimits renders client-limits.conf, route-limits.conf and
// batch-limits.conf, in that order.
func renderClientLimits(l ClientLimits) ([3][]byte, error) {
	var files [3][]byte
	if err := l.Check(); err != nil {
		return files, err
	}
	for i, name := range []string{"client-limits.conf.tmpl", "route-limits.conf.tmpl", "batch-limits.conf.tmpl"} {
		var buf bytes.Buffer
		if err := templates.ExecuteTemplate(&buf, name, l); err != nil {
			return files, fmt.Errorf("rendering %s: %w", name, err)
		}
		files[i] = buf.Bytes()
	}
	return files, nil
}
