package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
)

// fakeNginx stands in for nginx: Check reads the files as nginx -t would and
// fails when one of them contains "bad"; Reload counts.
type fakeNginx struct {
	files     []string
	checks    int
	reloads   int
	reloadErr error
	seen      map[string]string // file contents at the last check
}

func (f *fakeNginx) Check(ctx context.Context) error {
	f.checks++
	f.seen = map[string]string{}
	for _, p := range f.files {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f.seen[p] = string(b)
		if string(b) == "bad" {
			return errors.New(`nginx: [emerg] unexpected "bad"`)
		}
	}
	return nil
}

func (f *fakeNginx) Reload() error {
	f.reloads++
	return f.reloadErr
}

var (
	_ Checker  = (*fakeNginx)(nil)
	_ Reloader = (*fakeNginx)(nil)
)

func TestApply(t *testing.T) {
	const missing = "\x00missing"
	tests := []struct {
		name        string
		before      [2]string // servers.conf, tls.conf; missing means no file
		write       [2]string // desired content; "" means no change requested
		reloadErr   error
		want        Outcome
		wantErr     error
		wantChecks  int
		wantReloads int
		after       [2]string
	}{
		{name: "same content: nothing happens",
			before: [2]string{"a", "t"}, write: [2]string{"a", "t"},
			want: Unchanged, after: [2]string{"a", "t"}},
		{name: "nothing requested",
			before: [2]string{"a", "t"},
			want:   Unchanged, after: [2]string{"a", "t"}},
		{name: "new worker set passes: reload",
			before: [2]string{"a", "t"}, write: [2]string{"b", ""},
			want: Reloaded, wantChecks: 1, wantReloads: 1, after: [2]string{"b", "t"}},
		{name: "two files change: one check, one reload",
			before: [2]string{"a", "t"}, write: [2]string{"b", "u"},
			want: Reloaded, wantChecks: 1, wantReloads: 1, after: [2]string{"b", "u"}},
		{name: "file created",
			before: [2]string{"a", missing}, write: [2]string{"", "u"},
			want: Reloaded, wantChecks: 1, wantReloads: 1, after: [2]string{"a", "u"}},
		{name: "check fails: old file back, no reload",
			before: [2]string{"a", "t"}, write: [2]string{"bad", ""},
			want: Rejected, wantErr: ErrRejected, wantChecks: 1, after: [2]string{"a", "t"}},
		{name: "check fails on one of two: both restored",
			before: [2]string{"a", "t"}, write: [2]string{"b", "bad"},
			want: Rejected, wantErr: ErrRejected, wantChecks: 1, after: [2]string{"a", "t"}},
		{name: "check fails on a new file: file removed again",
			before: [2]string{"a", missing}, write: [2]string{"", "bad"},
			want: Rejected, wantErr: ErrRejected, wantChecks: 1, after: [2]string{"a", missing}},
		{name: "old file is bad, new one fixes it",
			before: [2]string{"bad", "t"}, write: [2]string{"a", ""},
			want: Reloaded, wantChecks: 1, wantReloads: 1, after: [2]string{"a", "t"}},
		{name: "reload fails: reported",
			before: [2]string{"a", "t"}, write: [2]string{"b", ""}, reloadErr: errNotRunning,
			want: Failed, wantErr: errNotRunning, wantChecks: 1, wantReloads: 1, after: [2]string{"b", "t"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			paths := [2]string{filepath.Join(dir, "servers.conf"), filepath.Join(dir, "tls.conf")}
			for i, c := range tt.before {
				if c != missing {
					if err := os.WriteFile(paths[i], []byte(c), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			fake := &fakeNginx{files: paths[:], reloadErr: tt.reloadErr}
			a := &Applier{Checker: fake, Reloader: fake, Log: zerolog.Nop()}
			var changes []Change
			for i, c := range tt.write {
				if c != "" {
					changes = append(changes, FileChange{Path: paths[i], Data: []byte(c)})
				}
			}
			got, err := a.Apply(context.Background(), changes...)
			if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("Apply(%q) = %v, %v; want %v, %v", tt.write, got, err, tt.want, tt.wantErr)
			}
			if fake.checks != tt.wantChecks || fake.reloads != tt.wantReloads {
				t.Errorf("Apply(%q): %d checks, %d reloads; want %d, %d",
					tt.write, fake.checks, fake.reloads, tt.wantChecks, tt.wantReloads)
			}
			if fake.checks > 0 {
				// The check must have seen the new content of every file.
				for i, c := range tt.write {
					if c != "" && fake.seen[paths[i]] != c && fake.seen[paths[i]] != "" {
						t.Errorf("check saw %q in %s, want %q", fake.seen[paths[i]], paths[i], c)
					}
				}
			}
			for i, want := range tt.after {
				b, err := os.ReadFile(paths[i])
				got := string(b)
				if errors.Is(err, os.ErrNotExist) {
					got = missing
				} else if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("after Apply(%q): %s = %q, want %q", tt.write, filepath.Base(paths[i]), got, want)
				}
			}
			leftovers, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
			if len(leftovers) > 0 {
				t.Errorf("temporary files left behind: %v", leftovers)
			}
		})
	}
}
