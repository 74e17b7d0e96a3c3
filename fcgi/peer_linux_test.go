package fcgi

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"sudoku-fcgi/fcgi/fcgitest"
)

// Over a unix socket the peer is the connecting user: every connection of
// one nginx (and of anything else running as its user) counts against one
// MaxConnsPerPeer, as every connection from one TCP address does. Before,
// unix socket peers were not counted, so a process with access to the
// socket could hold every connection while nginx's waited in the backlog.
func TestFastCGIConnLimitPerPeerUnix(t *testing.T) {
	sock := t.TempDir() + "/w.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := newTestService(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, s, serviceOptions(s, ServeOptions{MaxConns: 8, MaxConnsPerPeer: 2})) }()
	t.Cleanup(func() { cancel(); <-done })

	dial := func() *fcgitest.Client {
		t.Helper()
		conn, err := net.DialTimeout("unix", sock, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return fcgitest.NewClient(t, conn)
	}
	a := dial()
	for _, c := range []*fcgitest.Client{a, dial()} {
		if r := c.Do(1, "GET", "/sudoku?puzzle="+easy, "h", nil); r.Status != 200 {
			t.Fatalf("GET: status %d %q", r.Status, r.Body)
		}
	}
	expectClosed(t, dial())
	a.Conn.Close()
	expectServedSoon(t, dial)
}

func TestPeerOfUnixConn(t *testing.T) {
	sock := t.TempDir() + "/p.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	want := peer{uid: uint32(os.Getuid()), unix: true}
	if got := peerOf(server); got != want || !got.valid() {
		t.Errorf("peerOf(unix conn) = %+v, want %+v", got, want)
	}
}
