package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"testing"

	"github.com/rs/zerolog"

	"sudoku-fcgi/fcgi"
	"sudoku-fcgi/fcgi/fcgiserver"
	"sudoku-fcgi/fcgi/fcgitest"
)

// TestRunAgainstWorker runs a short attack on a real worker, over TCP and
// over a unix socket, and checks the counts it prints, and that the worker
// still answers afterwards.
func TestRunAgainstWorker(t *testing.T) {
	t.Run("tcp", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		attack(t, ln, ln.Addr().String(), func() net.Conn {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			return conn
		})
	})
	t.Run("unix", func(t *testing.T) {
		sock := t.TempDir() + "/w.sock"
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		attack(t, ln, "unix:"+sock, func() net.Conn {
			conn, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			return conn
		})
	})
}

// attack serves a worker on ln, runs fcgiabuse against target and checks
// its counts and that a connection from dial is still answered.
func attack(t *testing.T, ln net.Listener, target string, dial func() net.Conn) {
	t.Helper()
	cfg := fcgi.DefaultConfig()
	cfg.WorkerID = "abused"
	svc := fcgi.New(cfg, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fcgiserver.Serve(ctx, ln, svc, fcgiserver.DefaultOptions()) }()
	defer func() { cancel(); <-done }()

	var out bytes.Buffer
	args := []string{"-target", target, "-duration", "500ms", "-hold", "5", "-flood", "5"}
	if err := run(context.Background(), args, func(string) (string, bool) { return "", false }, &out); err != nil {
		t.Fatalf("run(%q) = %v", args, err)
	}
	var counts map[string]int64
	if err := json.Unmarshal(out.Bytes(), &counts); err != nil {
		t.Fatalf("output %q: %v", out.Bytes(), err)
	}
	if counts["conns"] < 10 || counts["begins"] == 0 || counts["bytes_sent"] == 0 {
		t.Errorf("counts = %v, want at least 10 conns and some begins and bytes", counts)
	}
	if r := fcgitest.NewClient(t, dial()).Do(1, "GET", "/sudoku/stats", "h", nil); r.Status != 200 {
		t.Errorf("after the attack: GET /sudoku/stats = %d %q, want 200", r.Status, r.Body)
	}
}
