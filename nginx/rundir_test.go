package nginx

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"sudoku-fcgi/nginx/conf"
)

// TestRunDirFiles: the run directory holds one file per template
// (X.conf.tmpl renders X.conf), nothing else, and the shipped
// configuration includes each of them from it and no other. This is the
// list of those files: the documents point here instead of restating it.
func TestRunDirFiles(t *testing.T) {
	want := conf.RunDirFiles()
	if len(want) == 0 {
		t.Fatal("conf.RunDirFiles() is empty")
	}
	dir := t.TempDir()
	s := &Supervisor{Config: Config{RunDir: dir, Workers: targets(t, "127.0.0.1:9000"), ResolveInterval: time.Second}, Log: zerolog.Nop()}
	if err := s.Render(context.Background()); err != nil {
		t.Fatalf("Render: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Errorf("Render wrote %v into the run directory, want one file per template: %v", got, want)
	}

	confs, err := filepath.Glob("*.conf")
	if err != nil {
		t.Fatal(err)
	}
	included := map[string]bool{}
	for _, c := range confs {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`\{\{\.RunDir\}\}/([a-z-]+\.conf)`).FindAllStringSubmatch(string(b), -1) {
			included[m[1]] = true
		}
	}
	if got := slices.Sorted(maps.Keys(included)); !slices.Equal(got, want) {
		t.Errorf("the shipped configuration includes %v from the run directory, want %v", got, want)
	}
}
