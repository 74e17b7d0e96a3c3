package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sudoku-fcgi/nginx/conf"
	"sudoku-fcgi/nginx/discover"
	"sudoku-fcgi/nginx/nginxtest"
)

// testNginx is nginxtest.ProxyConf with 2 worker processes.
func testNginx(t *testing.T, dir, runDir string, port int, http, server string) string {
	t.Helper()
	return nginxtest.ProxyConf(t, 2, dir, runDir, port, http, server)
}

func backend(t *testing.T, id string) discover.Addr {
	return discover.TCPAddr(nginxtest.Backend(t, id))
}

// TestProcessReload runs the real nginx: start, switch the upstream by
// Apply, refuse a broken file, stop gracefully.
func TestProcessReload(t *testing.T) {
	bin := nginxtest.NeedNginx(t)
	dir := t.TempDir()
	port := nginxtest.FreePort(t)
	cf := testNginx(t, dir, dir, port, "", "")
	a, b := backend(t, "a"), backend(t, "b")
	servers := filepath.Join(dir, "servers.conf")
	write := func(addrs ...discover.Addr) []byte {
		data, _, err := conf.UpstreamFiles{}.Render(addrs, len(addrs))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	if err := WriteFileAtomic(servers, write(a), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Process{Bin: bin, Prefix: dir, Conf: cf, Stdout: os.Stderr, Stderr: os.Stderr}
	ctx := context.Background()
	if err := p.Check(ctx); err != nil {
		t.Fatalf("Check on a good config: %v", err)
	}
	if err := p.Reload(); !errors.Is(err, errNotRunning) {
		t.Errorf("Reload before Start = %v, want ErrNotRunning", err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Terminate(); p.Wait() })

	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	waitFor(t, url, "a")

	ap := &Applier{Checker: p, Reloader: p, Log: nginxtest.Logger(t)}
	if got, err := ap.Apply(ctx, FileChange{Path: servers, Data: write(b)}); got != Reloaded || err != nil {
		t.Fatalf("Apply(b) = %v, %v; want reloaded", got, err)
	}
	waitFor(t, url, "b")

	broken := []byte("server 127.0.0.1:1 no_such_param;\n")
	got, err := ap.Apply(ctx, FileChange{Path: servers, Data: broken})
	if got != Rejected || !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "no_such_param") {
		t.Fatalf("Apply(broken) = %v, %v; want rejected with nginx's reason", got, err)
	}
	if data, _ := os.ReadFile(servers); string(data) != string(write(b)) {
		t.Errorf("after a rejected change servers.conf = %q, want the previous content", data)
	}
	if body := get(t, url); body != "b" {
		t.Errorf("after a rejected change nginx answered %q, want b", body)
	}

	// No worker: the placeholder keeps nginx valid and it answers 502.
	if got, err := ap.Apply(ctx, FileChange{Path: servers, Data: write()}); got != Reloaded || err != nil {
		t.Fatalf("Apply(none) = %v, %v; want reloaded", got, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusBadGateway {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("with no worker nginx did not answer 502 within 5s (last: %v %v)", resp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if err := p.Quit(); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Errorf("nginx exit after SIGQUIT: %v, want status 0", err)
	}
}

func TestProcessCheckReportsReason(t *testing.T) {
	bin := nginxtest.NeedNginx(t)
	dir := t.TempDir()
	cf := testNginx(t, dir, dir, nginxtest.FreePort(t), "", "")
	// servers.conf is missing: nginx -t must fail and say which file.
	err := (&Process{Bin: bin, Prefix: dir, Conf: cf}).Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "servers.conf") {
		t.Errorf("Check with a missing include = %v, want an error naming servers.conf", err)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// waitFor polls url until the body is want (a reload takes effect when new
// workers start).
func waitFor(t *testing.T, url, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = string(b)
			if resp.StatusCode == 200 && last == want {
				return
			}
		} else {
			last = err.Error()
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("GET %s: still %q after 5s, want %q", url, last, want)
}
