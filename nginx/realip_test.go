package nginx

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"sudoku-fcgi/nginx/conf"
	"sudoku-fcgi/nginx/nginxtest"
)

// TestRealIPFromTrustedProxyOnly (issue 31, real client addresses) runs
// nginx with the supervisor's real-ip.conf and a per-client limit of one
// request (1r/m, no burst): behind the trusted proxy (127.0.0.1) two
// forwarded addresses get a request each, a second one from the first
// is limited; a client that is not trusted (127.0.0.2) forging
// X-Forwarded-For keeps its own address and its own single request.
func TestRealIPFromTrustedProxyOnly(t *testing.T) {
	bin, dir, runDir, port, chPort := supervisorSetup(t)
	back := backend(t, "a")
	trusted, err := conf.ParsePrefixes([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cf := testNginxWorkers(t, 1, dir, runDir, port, fmt.Sprintf(`
    include %[1]s/tls.conf;
    include %[1]s/real-ip.conf;
    limit_req_zone $binary_remote_addr zone=per_client:1m rate=1r/m;
    limit_req_status 429;`, runDir), `
        limit_req zone=per_client;
        add_header X-Client $remote_addr always;`)
	sup := &Supervisor{Config: Config{
		Bin: bin, Prefix: dir, Conf: cf, RunDir: runDir, RealIPFrom: trusted,
		Workers:         targets(t, back.String()),
		ResolveInterval: time.Second, BudgetHold: time.Minute,
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := startSupervisor(ctx, t, sup, chPort)

	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	// get sends one request from the source address from, with
	// X-Forwarded-For xff when not empty.
	get := func(from, xff string) (int, string) {
		t.Helper()
		nginxtest.Running(t, done, "Run")
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
		req, _ := http.NewRequest("GET", url, nil)
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET from %s (X-Forwarded-For %q): %v", from, xff, err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("X-Client")
	}
	nginxtest.WaitUntil(t, 10*time.Second, "nginx answers", func() error {
		nginxtest.Running(t, done, "Run")
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err
	})

	for _, tt := range []struct {
		what, from, xff string
		code            int
		client          string
	}{
		{"first forwarded client", "127.0.0.1", "203.0.113.1", 200, "203.0.113.1"},
		{"second forwarded client, its own limit", "127.0.0.1", "198.51.100.9, 203.0.113.2", 200, "203.0.113.2"},
		{"first forwarded client again, limited", "127.0.0.1", "203.0.113.1", 429, "203.0.113.1"},
		{"untrusted client forging the header", "127.0.0.2", "192.0.2.1", 200, "127.0.0.2"},
		{"untrusted client with another forged address, same limit", "127.0.0.2", "192.0.2.2", 429, "127.0.0.2"},
	} {
		if code, client := get(tt.from, tt.xff); code != tt.code || client != tt.client {
			t.Errorf("%s: GET from %s with X-Forwarded-For %q = %d as client %q, want %d as %q",
				tt.what, tt.from, tt.xff, code, client, tt.code, tt.client)
		}
	}
	cancel()
	if err := nginxtest.Returned(t, done, 15*time.Second, "Run after cancel"); err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
}
