package cmd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestImageModules: each Go image downloads exactly the modules its
// binary's packages import, as `go list -deps` names them, and not the
// whole go.mod with the tests' dependencies. A module missing from the
// list would be fetched by the image's go build instead, one left over is
// downloaded for nothing.
func TestImageModules(t *testing.T) {
	for dockerfile, pkg := range map[string]string{
		"sudoku-fcgi.Dockerfile": "./sudoku-fcgi",
		"nginx.Dockerfile":       "./sudoku-edge",
	} {
		t.Run(dockerfile, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}{{end}}{{end}}", pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", pkg, err)
			}
			want := slices.Compact(slices.Sorted(slices.Values(strings.Fields(string(out)))))
			b, err := os.ReadFile(filepath.Join("..", "docker", dockerfile))
			if err != nil {
				t.Fatal(err)
			}
			got, ok := downloaded(string(b))
			if !ok {
				t.Fatalf("%s has no `RUN go mod download <modules>`", dockerfile)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s downloads\n  %s\nwant what %s imports (go list -deps):\n  %s", dockerfile, strings.Join(got, " "), pkg, strings.Join(want, " "))
			}
		})
	}
}

// downloaded returns the sorted arguments of the Dockerfile's `RUN go mod
// download` instruction, its continuation lines joined.
func downloaded(dockerfile string) ([]string, bool) {
	joined := strings.ReplaceAll(dockerfile, "\\\n", " ")
	for _, line := range strings.Split(joined, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "RUN go mod download"); ok {
			return slices.Sorted(slices.Values(strings.Fields(rest))), true
		}
	}
	return nil, false
}
