package fcgi

import (
	"context"
	"net"
	"testing"
	"time"

	"sudoku-fcgi/fcgi/fcgiserver"
	"sudoku-fcgi/fcgi/fcgitest"
)

// Over a unix socket the peer is the connecting user: every connection of
// one nginx (and of anything else running as its user) counts against one
// MaxConnsPerPeer, as every connection from one TCP address does. Before,
// unix socket peers were not counted, so a process with access to the
// socket could hold every connection while nginx's waited in the backlog.
func TestFastCGIConnLimitPerPeerUnix(t *testing.T) {
	ln, sock := fcgitest.ListenUnix(t)
	s := newTestService(t, cfg())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- fcgiserver.Serve(ctx, ln, s, serviceOptions(s, opts(func(o *fcgiserver.Options) { o.MaxConns = 8; o.MaxConnsPerPeer = 2 })))
	}()
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
