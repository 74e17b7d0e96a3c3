package conf

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"sudoku-fcgi/nginx/logs"
)

// TestNginxAcceptsTheAccessLog renders the project's config for the host
// (nginx/render-host.sh) with each form of access-log.conf and asks
// nginx -t. Skipped without nginx or bash on the PATH.
func TestNginxAcceptsTheAccessLog(t *testing.T) {
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("no nginx on the PATH")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash on the PATH")
	}
	_, file, _, _ := runtime.Caller(0)
	dir := t.TempDir()
	out, err := exec.Command("bash", filepath.Join(filepath.Dir(file), "..", "render-host.sh"), dir).CombinedOutput()
	if err != nil {
		t.Fatalf("render-host.sh: %v\n%s", err, out)
	}
	sock := filepath.Join(dir, "run", "log.sock")
	for _, a := range []logs.AccessLog{{}, {Path: sock}, {Path: sock, All: true}} {
		b, err := renderAccessLog(&a)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(b), "access_log syslog:server=unix:"+sock); got != (a.Path != "") {
			t.Errorf("%+v: access_log line present = %v:\n%s", a, got, b)
		}
		if err := os.WriteFile(filepath.Join(dir, "run", "access-log.conf"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(nginx, "-t", "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "error_log stderr;")
		out, err := cmd.CombinedOutput()
		if err != nil && !bytes.Contains(out, []byte("Permission denied")) {
			t.Errorf("%+v: nginx -t: %v\n%s", a, err, out)
		}
	}
	if _, err := renderAccessLog(&logs.AccessLog{Path: "/run/x;y"}); err == nil {
		t.Error("renderAccessLog with a ';' in the socket path = nil error")
	}
}

// TestSampleRegexPicksOneInSampleEvery: nginx.conf's sample regex matches
// exactly one request id in SampleEvery, over every id ending in the
// same digits but one more.
func TestSampleRegexPicksOneInSampleEvery(t *testing.T) {
	re := regexp.MustCompile(strings.TrimPrefix(sampleRegex(), "~"))
	digits := len(sampleRegex()) // "~" and "$" make room for one more digit
	n, matched := 1, 0
	for range digits {
		n *= 16
	}
	for i := range n {
		if re.MatchString(fmt.Sprintf("%032x", i)) {
			matched++
		}
	}
	if matched*logs.SampleEvery != n {
		t.Errorf("%s matches %d of %d request ids, want one in %d", sampleRegex(), matched, n, logs.SampleEvery)
	}
}
