package nginx

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
)

// TestEdgeApply: before nginx starts an Extension's include is only
// written; once it runs, a change goes through the check, a rejected one
// is put back, and names outside the run directory are refused.
func TestEdgeApply(t *testing.T) {
	dir := t.TempDir()
	fake := &fakeNginx{}
	s := &Supervisor{RunDir: dir}
	s.applier = &configApplier{Checker: fake, Reloader: fake, Log: zerolog.Nop()}
	e := s.edge()
	ctx := context.Background()
	path := filepath.Join(dir, "rate.conf")
	if reloaded, err := e.Apply(ctx, Include{"rate.conf", []byte("limit_req_zone x;\n")}); reloaded || err != nil || fake.checks != 0 {
		t.Errorf("Apply before start = %v, %v with %d checks; want written, no check", reloaded, err, fake.checks)
	}
	if b, _ := os.ReadFile(path); string(b) != "limit_req_zone x;\n" {
		t.Errorf("rate.conf = %q", b)
	}

	s.started.Store(true)
	if reloaded, err := e.Apply(ctx, Include{"rate.conf", []byte("limit_req_zone y;\n")}); !reloaded || err != nil || fake.checks != 1 {
		t.Errorf("Apply while running = %v, %v with %d checks; want reloaded after one check", reloaded, err, fake.checks)
	}
	two := []Include{{"rate.conf", []byte("limit_req_zone z;\n")}, {"queue.conf", []byte("limit_req zone=z;\n")}}
	if reloaded, err := e.Apply(ctx, two...); !reloaded || err != nil || fake.checks != 2 {
		t.Errorf("Apply of two includes = %v, %v with %d checks; want reloaded after one more check", reloaded, err, fake.checks)
	}
	s.applier.Checker = rejecter{}
	if reloaded, err := e.Apply(ctx, Include{"rate.conf", []byte("broken\n")}); reloaded || !errors.Is(err, errRejected) {
		t.Errorf("Apply of a rejected file = %v, %v; want not reloaded, errRejected", reloaded, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "limit_req_zone z;\n" {
		t.Errorf("after a rejected Apply rate.conf = %q, want the previous content", b)
	}
	for _, bad := range []string{"", "../x.conf", "a/b.conf", ".hidden"} {
		if _, err := e.Apply(ctx, Include{Name: bad}); err == nil {
			t.Errorf("Apply(%q) accepted it", bad)
		}
	}
}
