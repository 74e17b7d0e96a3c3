package nginx

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

// configChecker validates the configuration nginx would load now, as `nginx -t`
// does. It MUST honour ctx cancellation.
type configChecker interface {
	Check(ctx context.Context) error
}

// reloader makes a running nginx load its configuration again.
type reloader interface {
	Reload() error
}

// A configChange puts a new state of some file nginx reads in place.
type configChange interface {
	// Stage makes the change. It reports changed=false (and does nothing)
	// when the new state equals the current one; otherwise revert puts the
	// previous state back.
	Stage() (revert func() error, changed bool, err error)
	// String names the change for logs.
	String() string
}

// applyOutcome is what Apply did.
type applyOutcome int

const (
	unchanged applyOutcome = iota // nothing differed; nginx untouched
	reloaded                      // files written, check passed, nginx reloaded
	rejected                      // check failed; old files restored, nginx untouched
	failed                        // writing, restoring or reloading failed
)

func (o applyOutcome) String() string {
	switch o {
	case unchanged:
		return "unchanged"
	case reloaded:
		return "reloaded"
	case rejected:
		return "rejected"
	default:
		return "failed"
	}
}

// errRejected wraps the check's error when Apply refuses a configuration.
var errRejected = errors.New("nginx: configuration rejected, kept the previous one")

// configApplier is the reload decision. It serialises every change to the files
// nginx reads, so that discovery and certificate renewals never interleave
// between a check and its reload.
type configApplier struct {
	Checker  configChecker
	Reloader reloader
	Log      zerolog.Logger

	mu sync.Mutex
}

// Apply stages changes; if any of them changed something it checks the
// whole configuration and then reloads nginx. When the check fails it
// reverts every staged change, newest first, and returns an error wrapping
// errRejected and the check's output: nginx keeps running on the old files.
func (a *configApplier) Apply(ctx context.Context, changes ...configChange) (applyOutcome, error) {
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
			return failed, errors.Join(err, revertAll())
		}
		if changed {
			reverts = append(reverts, revert)
			names = append(names, c.String())
		}
	}
	if len(reverts) == 0 {
		return unchanged, nil
	}
	if err := a.Checker.Check(ctx); err != nil {
		rerr := revertAll()
		a.Log.Error().Err(err).Strs("changes", names).
			Msg("new nginx configuration failed the check; kept the previous one")
		if rerr != nil {
			return failed, errors.Join(fmt.Errorf("%w: %w", errRejected, err), fmt.Errorf("restoring: %w", rerr))
		}
		return rejected, fmt.Errorf("%w: %w", errRejected, err)
	}
	if err := a.Reloader.Reload(); err != nil {
		return failed, fmt.Errorf("reloading nginx: %w", err)
	}
	a.Log.Info().Strs("changes", names).Msg("nginx reloaded")
	return reloaded, nil
}

// fileChange replaces the content of one file.
type fileChange struct {
	Path string
	Data []byte
	Perm fs.FileMode // 0 means 0644
}

func (f fileChange) String() string { return f.Path }

// Stage writes f.Data atomically when it differs from the file's content.
func (f fileChange) Stage() (func() error, bool, error) {
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
	if err := writeFileAtomic(f.Path, f.Data, perm); err != nil {
		return nil, false, err
	}
	revert := func() error {
		if !existed {
			return os.Remove(f.Path)
		}
		return writeFileAtomic(f.Path, old, perm)
	}
	return revert, true, nil
}

// writeFileAtomic writes data to a temporary file in path's directory,
// syncs it and renames it over path, so that readers (nginx) see either the
// old content or the new one, never a mix.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) error {
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
