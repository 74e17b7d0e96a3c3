package admission

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestNginxAcceptsTheIncludes renders the project's config for the host
// (nginx/render-host.sh) with the queue on, a fixed rate and the log lines,
// and asks nginx -t. Skipped without nginx or bash on the PATH.
func TestNginxAcceptsTheIncludes(t *testing.T) {
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("no nginx on the PATH")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash on the PATH")
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "render-host.sh")
	dir := t.TempDir()
	out, err := exec.Command("bash", script, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("render-host.sh: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name  string
		q     queue
		lines logLines
	}{
		{"on", queueFor(8000, DefaultConfig()), logLines{filepath.Join(dir, "run", "log.sock"), true}},
		{"floor", queueFor(1, DefaultConfig()), logLines{}},
		{"off", queue{}, logLines{}},
		{"sampled", queue{}, logLines{Socket: filepath.Join(dir, "run", "log.sock")}},
	} {
		f, err := render(tc.q, tc.lines)
		if err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string][]byte{"admission-http.conf": f.HTTP, "admission-queue.conf": f.Location} {
			if err := os.WriteFile(filepath.Join(dir, "run", name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(nginx, "-t", "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "error_log stderr;")
		out, err := cmd.CombinedOutput()
		if err != nil && !bytes.Contains(out, []byte("Permission denied")) {
			t.Errorf("%s: nginx -t: %v\n%s", tc.name, err, out)
		}
	}
}
