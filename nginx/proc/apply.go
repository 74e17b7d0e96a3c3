package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/rs/zerolog"
)

// Checker validates the configuration nginx would load now, as `nginx -t`
// does. It MUST honour ctx cancellation.
type Checker interface {
	Check(ctx context.Context) error
}

// Reloader makes a running nginx load its configuration again.
type Reloader interface {
	Reload() error
}

// A Change puts a new state of some file nginx reads in place.
type Change interface {
	// Stage makes the change. It reports changed=false (and does nothing)
	// when the new state equals the current one; otherwise revert puts the
	// previous state back.
	Stage() (revert func() error, changed bool, err error)
	// String names the change for logs.
	String() string
}

// Outcome is what Apply did.
type Outcome int

const (
	Unchanged Outcome = iota // nothing differed; nginx untouched
	Reloaded                 // files written, check passed, nginx reloaded
	Rejected                 // check failed; old files restored, nginx untouched
	Failed                   // writing, restoring or reloading failed
)

// String names the outcome, as logs and the reloads metric's label do.
func (o Outcome) String() string {
	switch o {
	case Unchanged:
		return "unchanged"
	case Reloaded:
		return "reloaded"
	case Rejected:
		return "rejected"
	default:
		return "failed"
	}
}

// ErrRejected wraps the check's error when Apply refuses a configuration.
var ErrRejected = errors.New("nginx: configuration rejected, kept the previous one")

// Applier is the reload decision. It serialises every change to the files
// nginx reads, so that discovery and certificate renewals never interleave
// between a check and its reload.
type Applier struct {
	Checker  Checker
	Reloader Reloader
	Log      zerolog.Logger
	// Count, when set, is called with the outcome of every Apply that
	// found something changed.
	Count func(Outcome)

	mu sync.Mutex
}

// Apply stages changes; if any of them changed something it checks the
// whole configuration and then reloads nginx. When the check fails it
// reverts every staged change, newest first, and returns an error wrapping
// ErrRejected and the check's output: nginx keeps running on the old files.
// Count sees the outcome once the lock is released.
func (a *Applier) Apply(ctx context.Context, changes ...Change) (o Outcome, err error) {
	defer func() {
		if a.Count != nil && o != Unchanged {
			a.Count(o)
		}
	}()
	a.mu.Lock()
	defer a.mu.Unlock()

	var reverts []func() error
	var names []string
	revertAll := func() error {
		var errs []error
		for i := len(reverts) - 1; i >= 0; i-- {
			errs = append(errs, reverts[i]())
		}
		return errors.Join(errs...)
	}
	for _, c := range changes {
		revert, changed, err := c.Stage()
		if err != nil {
			err = fmt.Errorf("staging %s: %w", c, err)
			return Failed, errors.Join(err, revertAll())
		}
		if changed {
			reverts = append(reverts, revert)
			names = append(names, c.String())
		}
	}
	if len(reverts) == 0 {
		return Unchanged, nil
	}
	if err := a.Checker.Check(ctx); err != nil {
		rerr := revertAll()
		a.Log.Error().Err(err).Strs("changes", names).
			Msg("new nginx configuration failed the check; kept the previous one")
		if rerr != nil {
			return Failed, errors.Join(fmt.Errorf("%w: %w", ErrRejected, err), fmt.Errorf("restoring: %w", rerr))
		}
		return Rejected, fmt.Errorf("%w: %w", ErrRejected, err)
	}
	if err := a.Reloader.Reload(); err != nil {
		return Failed, fmt.Errorf("reloading nginx: %w", err)
	}
	a.Log.Info().Strs("changes", names).Msg("nginx reloaded")
	return Reloaded, nil
}

// FileChange replaces the content of one file.
type FileChange struct {
	Path string
	Data []byte
	Perm fs.FileMode // 0 means 0644
}

// String names the change by its file.
func (f FileChange) String() string { return f.Path }

// Stage writes f.Data atomically when it differs from the file's content.
func (f FileChange) Stage() (func() error, bool, error) {
	perm := f.Perm
	if perm == 0 {
		perm = 0o644
	}
	old, err := os.ReadFile(f.Path)
	existed := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	if existed && bytes.Equal(old, f.Data) {
		return nil, false, nil
	}
	if err := WriteFileAtomic(f.Path, f.Data, perm); err != nil {
		return nil, false, err
	}
	revert := func() error {
		if !existed {
			return os.Remove(f.Path)
		}
		return WriteFileAtomic(f.Path, old, perm)
	}
	return revert, true, nil
}

// WriteFileAtomic writes data to a temporary file in path's directory,
// syncs it and renames it over path, so that readers (nginx) see either the
// old content or the new one, never a mix.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(name, path)
}
