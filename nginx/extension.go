package nginx

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Extension is a part of the edge beside discovery and certificates that
// renders an include of its own, such as the admission controller. It
// reads what the supervisor knows and changes nginx only through Edge, so
// that its reloads share the check-and-revert path of every other change.
type Extension interface {
	// Start writes the extension's include files (Edge.Apply) before nginx
	// starts: nginx refuses to start while an include is missing.
	Start(ctx context.Context, e *Edge) error
	// Run runs from nginx's start until ctx ends.
	Run(ctx context.Context, e *Edge)
}

// Edge is what an Extension may do with the supervised nginx. It is safe
// for concurrent use.
type Edge struct{ s *Supervisor }

func (s *Supervisor) edge() *Edge { return &Edge{s} }

// Workers returns the worker addresses in servers.conf now, as nginx's
// server directive names them: "172.18.0.3:9000", "unix:/run/x/a.sock".
func (e *Edge) Workers() []string {
	e.s.addrsMu.Lock()
	defer e.s.addrsMu.Unlock()
	return addrStrings(e.s.addrs)
}

// Apply puts data in RunDir/name when it differs from the file there. Once
// nginx runs, it then checks the whole configuration and reloads nginx,
// and puts the old file back when nginx -t rejects it (the error wraps
// the check's explanation). It reports whether nginx reloaded.
func (e *Edge) Apply(ctx context.Context, name string, data []byte) (bool, error) {
	if name == "" || strings.ContainsRune(name, '/') || name != filepath.Clean(name) || strings.HasPrefix(name, ".") {
		return false, fmt.Errorf("nginx: include name %q: a plain file name in the run directory", name)
	}
	f := fileChange{Path: e.s.path(name), Data: data}
	if !e.s.started.Load() { // before nginx starts: nothing to check or reload yet
		_, _, err := f.Stage()
		return false, err
	}
	outcome, err := applyCounted(ctx, e.s.applier, e.s.Metrics, f)
	if err != nil && !errors.Is(err, errRejected) {
		err = fmt.Errorf("applying %s: %w", name, err)
	}
	return outcome == reloaded, err
}
