package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sudoku-fcgi/nginx/nginxtest"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseConfig(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		c, err := parseConfig(nil, env(nil), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if c.workers != "sudoku:9000" || c.resolveInterval != 2*time.Second || c.budgetHold != time.Minute || c.runDir != "/run/sudoku-edge" ||
			c.nginxBin != "nginx" || c.nginxConf != "/etc/nginx/nginx.conf" || c.challengeListen != "127.0.0.1:8081" {
			t.Errorf("parseConfig(nil) = %+v, want the documented defaults", c)
		}
	})
	t.Run("env twins, flags win", func(t *testing.T) {
		c, err := parseConfig([]string{"-workers", "w:1"}, env(map[string]string{
			"SUDOKU_EDGE_WORKERS":          "ignored:2",
			"SUDOKU_EDGE_RESOLVE_INTERVAL": "500ms",
			"SUDOKU_EDGE_UPSTREAM_PARAMS":  "max_fails=0",
			"SUDOKU_EDGE_BUDGET_HOLD":      "5m",
		}), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if c.workers != "w:1" || c.resolveInterval != 500*time.Millisecond || c.upstreamParams != "max_fails=0" || c.budgetHold != 5*time.Minute {
			t.Errorf("parseConfig = %+v", c)
		}
	})
	bad := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-resolve-interval", "0s"}, nil, "not positive"},
		{[]string{"-budget-hold", "0s"}, nil, "not positive"},
		{nil, map[string]string{"SUDOKU_EDGE_RESOLVE_INTERVAL": "soon"}, "SUDOKU_EDGE_RESOLVE_INTERVAL"},
		{[]string{"-upstream-params", "max_fails=0; }"}, nil, "unsafe"},
		{[]string{"-workers", "sudoku"}, nil, "missing port"},
		{[]string{"-log-level", "loud"}, nil, "log-level"},
		{[]string{"extra"}, nil, "unexpected argument"},
	}
	for _, tt := range bad {
		t.Run(strings.Join(tt.args, " ")+fmt.Sprint(tt.env), func(t *testing.T) {
			_, err := parseConfig(tt.args, env(tt.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseConfig(%q, %v) error = %v, want one mentioning %q", tt.args, tt.env, err, tt.want)
			}
		})
	}
}

func TestHelpShowsEnvAndDefaults(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-help"}, env(nil), &out)
	if !errors.Is(err, errHelp) || exitCode(err) != 0 {
		t.Fatalf("run(-help) = %v, want errHelp with exit 0", err)
	}
	for _, want := range []string{"$SUDOKU_EDGE_WORKERS", `(default "sudoku:9000")`, `(default "2s")`, "-resolve-interval"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help output lacks %q:\n%s", want, out.String())
		}
	}
}

// hostConf is a host variant of the project's nginx.conf layout: upstream
// from run/servers.conf, tls.conf at http level, challenges proxied to the
// edge's responder, and trusted-clients.conf in a geo block whose value
// comes back in the X-Trusted header.
func hostConf(t *testing.T, dir, runDir string, port, challengePort int) string {
	t.Helper()
	return nginxtest.WriteConf(t, dir, 1, 128, fmt.Sprintf(`
    upstream sudoku_workers {
        zone sudoku_workers 64k;
        random two least_conn;
        include %[1]s/servers.conf;
        keepalive 8;
    }
    include %[1]s/tls.conf;
    geo $trusted {
        default 0;
        include %[1]s/trusted-clients.conf;
    }
    server {
        listen 127.0.0.1:%[2]d;
        location /.well-known/acme-challenge/ {
            proxy_pass http://127.0.0.1:%[3]d;
            proxy_set_header Host $host;
        }
        location / {
            proxy_pass http://sudoku_workers;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            add_header X-Trusted $trusted;
        }
    }
`, runDir, port, challengePort))
}

// TestRunServesAndStopsGracefully runs the whole command against the host's
// nginx with two HTTP backends standing in for workers: both get traffic,
// a challenge path answers 404 with TLS off; when one stops, the other takes
// its share until -budget-hold runs out; and cancelling the context
// (SIGTERM in main) stops nginx with status 0.
func TestRunServesAndStopsGracefully(t *testing.T) {
	bin := nginxtest.NeedNginx(t)
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	port, chPort := nginxtest.FreePort(t), nginxtest.FreePort(t)
	conf := hostConf(t, dir, runDir, port, chPort)
	var targets []string
	var backends []*httptest.Server
	for _, id := range []string{"a", "b"} {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, id) }))
		t.Cleanup(s.Close)
		targets = append(targets, strings.TrimPrefix(s.URL, "http://"))
		backends = append(backends, s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{
			"-nginx", bin, "-nginx-prefix", dir, "-nginx-conf", conf, "-run-dir", runDir,
			"-workers", strings.Join(targets, ","), "-upstream-params", "max_fails=0 max_conns=64",
			"-challenge-listen", fmt.Sprintf("127.0.0.1:%d", chPort), "-resolve-interval", "100ms", "-budget-hold", "1s",
			"-trusted-clients", "127.0.0.1, 192.0.2.0/24",
		}, env(nil), io.Discard)
	}()

	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	seen := map[string]bool{}
	trusted := ""
	deadline := time.Now().Add(10 * time.Second)
	for len(seen) < 2 && time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("run returned early: %v", err)
		default:
		}
		if resp, err := http.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				seen[string(b)] = true
				trusted = resp.Header.Get("X-Trusted")
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !seen["a"] || !seen["b"] {
		t.Fatalf("backends reached through nginx: %v, want a and b", seen)
	}
	if trusted != "1" {
		t.Errorf("X-Trusted = %q for a client on 127.0.0.1 with -trusted-clients 127.0.0.1, want 1", trusted)
	}
	servers, _ := os.ReadFile(filepath.Join(runDir, "servers.conf"))
	for _, tgt := range targets {
		if !strings.Contains(string(servers), "server "+tgt+" max_fails=0 max_conns=64;") {
			t.Errorf("servers.conf lacks %s:\n%s", tgt, servers)
		}
	}
	// Two workers x max_conns=64, written with servers.conf.
	if adm, _ := os.ReadFile(filepath.Join(runDir, "admission.conf")); !strings.Contains(string(adm), "limit_conn sudoku_admission 128;") {
		t.Errorf("admission.conf lacks the limit for two workers x 64:\n%s", adm)
	}
	resp, err := http.Get(url + ".well-known/acme-challenge/token")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("challenge with TLS off: status %d, want 404", resp.StatusCode)
	}

	// b stops (it refuses connections): a takes its share at once, then,
	// once b has been missing for -budget-hold, only its own.
	backends[1].Close()
	stopped := time.Now()
	waitFiles := func(servers, admission string) time.Duration {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			srv, _ := os.ReadFile(filepath.Join(runDir, "servers.conf"))
			adm, _ := os.ReadFile(filepath.Join(runDir, "admission.conf"))
			if strings.Contains(string(srv), servers) && !strings.Contains(string(srv), "server "+targets[1]) &&
				strings.Contains(string(adm), admission) {
				return time.Since(stopped)
			}
		}
		srv, _ := os.ReadFile(filepath.Join(runDir, "servers.conf"))
		adm, _ := os.ReadFile(filepath.Join(runDir, "admission.conf"))
		t.Fatalf("want %q without %s and %q; have:\n%s\n%s", servers, targets[1], admission, srv, adm)
		return 0
	}
	shared := waitFiles("server "+targets[0]+" max_fails=0 max_conns=128;", "limit_conn sudoku_admission 128;")
	lowered := waitFiles("server "+targets[0]+" max_fails=0 max_conns=64;", "limit_conn sudoku_admission 64;")
	if lowered < time.Second || lowered-shared < 500*time.Millisecond {
		t.Errorf("b stopped; a took its share after %v and gave it back after %v, want the share kept for the 1s hold", shared, lowered)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel = %v, want nil (nginx status 0)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return within 10s of cancel")
	}
	if _, err := http.Get(url); err == nil {
		t.Error("nginx still answers after run returned")
	}
}

// TestRunExitsWithNginxStatus: nginx that cannot start (bad config) makes
// run return its exit status.
func TestRunExitsWithNginxStatus(t *testing.T) {
	bin := nginxtest.NeedNginx(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "nginx.conf")
	os.WriteFile(conf, []byte("events {}\nhttp { no_such_directive; }\n"), 0o644)
	err := run(context.Background(), []string{
		"-nginx", bin, "-nginx-prefix", dir, "-nginx-conf", conf, "-run-dir", filepath.Join(dir, "run"),
		"-workers", "127.0.0.1:1", "-challenge-listen", fmt.Sprintf("127.0.0.1:%d", nginxtest.FreePort(t)),
	}, env(nil), io.Discard)
	if code := exitCode(err); code != 1 {
		t.Errorf("run with a broken nginx.conf: %v (exit %d), want nginx's exit status 1", err, code)
	}
}
