package browser

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the asset versions in nginx/www/index.html")

const wwwDir = "../../nginx/www"

// assetRef is a reference to a versioned asset in index.html.
var assetRef = regexp.MustCompile(`"/assets/([a-z0-9.-]+)\?v=([0-9a-f]*)"`)

// assetVersion is the version index.html must give an asset: the first 8
// hex digits of its SHA-256.
func assetVersion(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(wwwDir, "assets", name))
	if err != nil {
		t.Fatalf("index.html names an asset that is missing: %v", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:4])
}

// TestAssetVersions checks that every asset index.html loads carries its
// content's version, since nginx lets browsers cache a versioned asset for a
// year: an asset edited without a new version would stay stale. After an
// edit, run `go test ./tests/browser -run TestAssetVersions -update`.
func TestAssetVersions(t *testing.T) {
	path := filepath.Join(wwwDir, "index.html")
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	refs := assetRef.FindAllSubmatch(html, -1)
	if len(refs) == 0 {
		t.Fatalf("%s loads no /assets/<name>?v=<version>", path)
	}
	stale := 0
	fixed := assetRef.ReplaceAllFunc(html, func(m []byte) []byte {
		sub := assetRef.FindSubmatch(m)
		want := assetVersion(t, string(sub[1]))
		if string(sub[2]) != want {
			stale++
			if !*update {
				t.Errorf("%s: /assets/%s has version %q, want %q (run with -update)", path, sub[1], sub[2], want)
			}
		}
		return []byte(`"/assets/` + string(sub[1]) + `?v=` + want + `"`)
	})
	if *update && stale > 0 {
		if err := os.WriteFile(path, fixed, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("updated %d asset versions in %s", stale, path)
	}
	// Every file under assets/ is loaded by the page (none is left behind).
	files, err := os.ReadDir(filepath.Join(wwwDir, "assets"))
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, r := range refs {
		named[string(r[1])] = true
	}
	for _, f := range files {
		if !named[f.Name()] {
			t.Errorf("assets/%s is not loaded by index.html", f.Name())
		}
	}
}
