package edgetls

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/caddyserver/certmagic"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"sudoku-fcgi/nginx/proc"
)

// TestExportRevertsRejectedPair: a new pair that nginx -t rejects must not
// stay live; the live symlink goes back to the previous version and the
// rejected version directory is removed. An accepted pair goes live and old
// versions are pruned. The metrics report the pair that nginx reads, and
// no other: the placeholder as such, with expiry 0, not its own 90 days.
func TestExportRevertsRejectedPair(t *testing.T) {
	dir := t.TempDir()
	metrics := NewMetrics()
	expiry := func() float64 { return testutil.ToFloat64(metrics.certExpiry.WithLabelValues("a.example.com")) }
	placeholderGauge := func() float64 {
		return testutil.ToFloat64(metrics.certPlaceholder.WithLabelValues("a.example.com"))
	}
	fake := &fakeNginx{}
	applier := &proc.Applier{Checker: fake, Reloader: fake, Log: zerolog.Nop()}
	et, err := New(&Options{
		Domains: []string{"a.example.com"}, CA: "https://127.0.0.1:1/dir", // never contacted: run is not called
		StoragePath: filepath.Join(dir, "acme"), HTTPSListen: "8443", Locations: "/etc/nginx/sudoku-locations.conf",
	}, dir, "127.0.0.1:1", applier, metrics, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	m := et.certs
	defer m.Stop()
	ctx := context.Background()
	if err := et.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(dir, "certs", "live")
	first, _ := os.Readlink(live)
	placeholder := m.exportedPair("a.example.com")
	if first == "" || placeholder == nil || placeholder.source != "exported" {
		t.Fatalf("after Prepare: live -> %q, pair %+v; want a placeholder version", first, placeholder)
	}
	if !placeholder.placeholder || expiry() != 0 || placeholderGauge() != 1 {
		t.Errorf("after prepare: placeholder %v, expiry gauge %v, placeholder gauge %v; want a placeholder, 0 and 1",
			placeholder.placeholder, expiry(), placeholderGauge())
	}

	// Nothing new in storage: nothing to do, no check.
	if got, err := et.export(ctx); got != proc.Unchanged || err != nil || fake.checks != 0 {
		t.Fatalf("Export with nothing new = %v, %v (%d checks); want unchanged, no check", got, err, fake.checks)
	}

	// A "new certificate" in storage, which nginx -t rejects.
	store := func() *pair {
		p, err := selfSignedBy("a.example.com", "a test CA")
		if err != nil {
			t.Fatal(err)
		}
		ik := m.issuer.IssuerKey()
		if err := m.cfg.Storage.Store(ctx, certmagic.StorageKeys.SiteCert(ik, "a.example.com"), p.cert); err != nil {
			t.Fatal(err)
		}
		if err := m.cfg.Storage.Store(ctx, certmagic.StorageKeys.SitePrivateKey(ik, "a.example.com"), p.key); err != nil {
			t.Fatal(err)
		}
		return p
	}
	store()
	applier.Checker = rejecter{}
	got, err := et.export(ctx)
	if got != proc.Rejected || !errors.Is(err, proc.ErrRejected) {
		t.Fatalf("Export with a pair nginx rejects = %v, %v; want rejected", got, err)
	}
	if now, _ := os.Readlink(live); now != first {
		t.Errorf("after a rejected export live -> %q, want the previous %q", now, first)
	}
	if p := m.exportedPair("a.example.com"); p == nil || p.serial != placeholder.serial {
		t.Errorf("after a rejected export nginx would read serial %v, want the previous %s", p, placeholder.serial)
	}
	versions, _ := filepath.Glob(filepath.Join(dir, "certs", "v*"))
	if len(versions) != 1 {
		t.Errorf("after a rejected export: version dirs %v, want only the previous one", versions)
	}
	// Still the placeholder, not the rejected pair.
	if expiry() != 0 || placeholderGauge() != 1 {
		t.Errorf("after a rejected export: expiry gauge %v, placeholder gauge %v; want the placeholder's 0 and 1", expiry(), placeholderGauge())
	}

	// Accepted: the new pair goes live; repeated renewals keep two versions.
	applier.Checker = fake
	var last *pair
	for range 3 {
		last = store()
		if got, err := et.export(ctx); got != proc.Reloaded || err != nil {
			t.Fatalf("Export with an accepted pair = %v, %v; want reloaded", got, err)
		}
	}
	if p := m.exportedPair("a.example.com"); p == nil || p.serial != last.serial || p.source != "exported" {
		t.Errorf("live pair %+v, want serial %s", p, last.serial)
	}
	if want := float64(last.notAfter.Unix()); expiry() != want || placeholderGauge() != 0 {
		t.Errorf("after three accepted exports: expiry gauge %v, placeholder gauge %v; want the last pair's %v and 0", expiry(), placeholderGauge(), want)
	}
	if info, err := os.Stat(filepath.Join(live, "a.example.com.key")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("exported key: %v, %v; want mode 0600", info, err)
	}
	versions, _ = filepath.Glob(filepath.Join(dir, "certs", "v*"))
	if len(versions) != 2 {
		t.Errorf("after three renewals: version dirs %v, want 2 (live and the one before)", versions)
	}
}

// fakeNginx stands in for nginx: it passes every check and counts the
// checks and reloads.
type fakeNginx struct{ checks, reloads int }

func (f *fakeNginx) Check(context.Context) error { f.checks++; return nil }
func (f *fakeNginx) Reload() error               { f.reloads++; return nil }

// rejecter is an nginx whose check always fails.
type rejecter struct{}

func (rejecter) Check(context.Context) error {
	return errors.New(`nginx: [emerg] SSL_CTX_use_PrivateKey failed (key values mismatch)`)
}

// TestCertFailuresCounted: certmagic's cert_failed event, only logged
// before, counts in sudoku_edge_certificate_failures_total.
func TestCertFailuresCounted(t *testing.T) {
	dir := t.TempDir()
	metrics := NewMetrics()
	et, err := New(&Options{
		Domains: []string{"a.example.com"}, CA: "https://127.0.0.1:1/dir",
		StoragePath: filepath.Join(dir, "acme"), HTTPSListen: "8443", Locations: "/etc/nginx/sudoku-locations.conf",
	}, dir, "127.0.0.1:1", nil, metrics, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer et.Stop()
	ctx := context.Background()
	for range 2 {
		if err := et.certs.onEvent(ctx, "cert_failed", map[string]any{"identifier": "a.example.com", "error": "urn:ietf:params:acme:error:connection"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := et.certs.onEvent(ctx, "cert_obtained", map[string]any{"identifier": "a.example.com"}); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(metrics.certFailures); got != 2 {
		t.Errorf("sudoku_edge_certificate_failures_total = %v after two cert_failed events, want 2", got)
	}
}
