// Package release checks `make pin-digests` (.ci/pin-digests) on a copy of
// the production manifests: the Swarm stack and the Kubernetes base end up
// referencing the images by digest, and bad input changes nothing.
package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var pins = map[string]string{
	"sudoku-fcgi":     "registry.example:5000/sudoku/sudoku-fcgi@sha256:" + strings.Repeat("1", 64),
	"sudoku-edge":     "registry.example:5000/sudoku/sudoku-edge@sha256:" + strings.Repeat("2", 64),
	"sudoku-exporter": "registry.example:5000/sudoku/sudoku-exporter@sha256:" + strings.Repeat("3", 64),
}

// copyManifests copies docker/stack.yml and docker/k8s into a temporary
// directory and returns it.
func copyManifests(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("..", "..", "docker")
	if err := os.CopyFS(filepath.Join(dir, "k8s"), os.DirFS(filepath.Join(src, "k8s"))); err != nil {
		t.Fatal(err)
	}
	stack, err := os.ReadFile(filepath.Join(src, "stack.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stack.yml"), stack, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func pin(t *testing.T, dir string, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join("..", "..", ".ci", "pin-digests"), append([]string{dir}, args...)...)
	return cmd.CombinedOutput()
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPinDigests(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skipf("no bash: %v", err)
	}
	dir := copyManifests(t)
	var args []string
	for name, ref := range pins {
		args = append(args, name+"="+ref)
	}
	// Twice: a second run replaces the first run's pins, it adds nothing.
	for range 2 {
		if out, err := pin(t, dir, args...); err != nil {
			t.Fatalf("pin-digests: %v\n%s", err, out)
		}
	}
	stack, kust := read(t, filepath.Join(dir, "stack.yml")), read(t, filepath.Join(dir, "k8s", "kustomization.yaml"))
	for name, ref := range pins {
		variable := strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_IMAGE"
		if want := "${" + variable + ":-" + ref + "}"; strings.Count(stack, want) != 1 {
			t.Errorf("stack.yml: want one %s", want)
		}
		repo, digest, _ := strings.Cut(ref, "@")
		if want := "  - name: " + name + "\n    newName: " + repo + "\n    digest: " + digest + "\n"; !strings.Contains(kust, want) {
			t.Errorf("kustomization.yaml lacks\n%s", want)
		}
	}
	if strings.Contains(kust, "newTag:") {
		t.Errorf("kustomization.yaml keeps a newTag beside the digests:\n%s", kust)
	}

	// What Kubernetes gets: every container image is a pinned reference.
	var render *exec.Cmd
	if _, err := exec.LookPath("kubectl"); err == nil {
		render = exec.Command("kubectl", "kustomize", filepath.Join(dir, "k8s"))
	} else if _, err := exec.LookPath("kustomize"); err == nil {
		render = exec.Command("kustomize", "build", filepath.Join(dir, "k8s"))
	} else {
		t.Log("no kubectl or kustomize on PATH: the rendered images are not checked")
		return
	}
	out, err := render.Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(render.Args, " "), err)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "image: ") {
			continue
		}
		img := strings.TrimPrefix(line, "image: ")
		found := false
		for _, ref := range pins {
			found = found || img == ref
		}
		if !found {
			t.Errorf("rendered base has image %q, not one of the pinned references", img)
		}
	}
}

func TestPinDigestsRejects(t *testing.T) {
	for _, tc := range []struct{ name, arg, want string }{
		{"unknown image", "sudoku-web=r/x@sha256:" + strings.Repeat("a", 64), "unknown image"},
		{"short digest", "sudoku-fcgi=r/x@sha256:abc", "not REPO@sha256"},
	} {
		// A good pair first: nothing is written unless every pair is good.
		good := "sudoku-edge=r/edge@sha256:" + strings.Repeat("b", 64)
		t.Run(tc.name, func(t *testing.T) {
			dir := copyManifests(t)
			before := read(t, filepath.Join(dir, "stack.yml")) + read(t, filepath.Join(dir, "k8s", "kustomization.yaml"))
			out, err := pin(t, dir, good, tc.arg)
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Errorf("pin-digests %s = %v, %q; want an error saying %q", tc.arg, err, out, tc.want)
			}
			if after := read(t, filepath.Join(dir, "stack.yml")) + read(t, filepath.Join(dir, "k8s", "kustomization.yaml")); after != before {
				t.Errorf("pin-digests %s changed the manifests", tc.arg)
			}
		})
	}
}
