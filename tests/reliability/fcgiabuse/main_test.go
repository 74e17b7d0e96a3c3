package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"testing"

	"github.com/rs/zerolog"

	"sudoku-fcgi/fcgi"
	"sudoku-fcgi/fcgi/fcgitest"
)

// TestRunAgainstWorker runs a short attack on a real worker and checks the
// counts it prints, and that the worker still answers afterwards.
func TestRunAgainstWorker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	svc := fcgi.New(fcgi.Config{WorkerID: "abused"}, zerolog.Nop(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fcgi.Serve(ctx, ln, svc, fcgi.ServeOptions{Conns: svc}) }()
	defer func() { cancel(); <-done }()

	var out bytes.Buffer
	args := []string{"-target", ln.Addr().String(), "-duration", "500ms", "-hold", "5", "-flood", "5"}
	if err := run(context.Background(), args, func(string) string { return "" }, &out); err != nil {
		t.Fatalf("run(%q) = %v", args, err)
	}
	var counts map[string]int64
	if err := json.Unmarshal(out.Bytes(), &counts); err != nil {
		t.Fatalf("output %q: %v", out.Bytes(), err)
	}
	if counts["conns"] < 10 || counts["begins"] == 0 || counts["bytes_sent"] == 0 {
		t.Errorf("counts = %v, want at least 10 conns and some begins and bytes", counts)
	}
	if r := fcgitest.Dial(t, ln.Addr().String()).Do(1, "GET", "/sudoku/stats", "h", nil); r.Status != 200 {
		t.Errorf("after the attack: GET /sudoku/stats = %d %q, want 200", r.Status, r.Body)
	}
}
