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
// changes nginx only through Edge, so that its reloads share the
// check-and-revert path of every other change.
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

// Include is one file an Extension renders: a plain file name in the run
// directory and its content.
type Include struct {
	Name string
	Data []byte
}

// Apply puts each include in the run directory when it differs from the
// file there. Once nginx runs, it then checks the whole configuration once
// and reloads nginx, and puts the old files back when nginx -t rejects it
// (the error wraps the check's explanation). It reports whether nginx
// reloaded.
func (e *Edge) Apply(ctx context.Context, includes ...Include) (bool, error) {
	changes := make([]configChange, len(includes))
	for i, in := range includes {
		if in.Name == "" || strings.ContainsRune(in.Name, '/') || in.Name != filepath.Clean(in.Name) || strings.HasPrefix(in.Name, ".") {
			return false, fmt.Errorf("nginx: include name %q: a plain file name in the run directory", in.Name)
		}
		changes[i] = fileChange{Path: e.s.path(in.Name), Data: in.Data}
	}
	if !e.s.started.Load() { // before nginx starts: nothing to check or reload yet
		for _, c := range changes {
			if _, _, err := c.Stage(); err != nil {
				return false, err
			}
		}
		return false, nil
	}
	outcome, err := applyCounted(ctx, e.s.applier, e.s.Metrics, changes...)
	if err != nil && !errors.Is(err, errRejected) {
		err = fmt.Errorf("applying %s: %w", includeNames(includes), err)
	}
	return outcome == reloaded, err
}

func includeNames(includes []Include) string {
	names := make([]string, len(includes))
	for i, in := range includes {
		names[i] = in.Name
	}
	return strings.Join(names, ", ")
}
