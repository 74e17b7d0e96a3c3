package suite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func jsonValid(b []byte) bool { return json.Valid(b) }

// hostileRequest builds one raw HTTP/1.1 request of a random hostile kind.
// The kinds cover bad puzzles, huge ids, bad percent-encoding, bad Host,
// NUL bytes and oversized URIs, headers and bodies, plus batch bodies.
func hostileRequest(r *rand.Rand, good []string) (kind string, req []byte) {
	puzzle := good[r.IntN(len(good))]
	host := "localhost"
	path := "/sudoku?puzzle=" + puzzle
	method := "GET"
	var headers []string
	var body []byte
	kinds := []string{
		"bad-puzzle", "short-puzzle", "long-puzzle", "conflict", "unsolvable", "huge-id",
		"bad-percent", "bad-host", "nul-uri", "nul-header", "huge-uri", "huge-header",
		"many-headers", "huge-body", "batch-garbage", "batch-huge-lines", "bad-method",
		"bad-version", "dup-params", "unicode", "format-text", "stats-junk", "chunked-junk",
		"bad-content-length",
	}
	kind = kinds[r.IntN(len(kinds))]
	switch kind {
	case "bad-puzzle":
		b := []byte(puzzle)
		for i := 0; i < 1+r.IntN(5); i++ {
			b[r.IntN(81)] = byte(r.IntN(256))
		}
		path = "/sudoku?puzzle=" + pctEncodeSome(r, b)
	case "short-puzzle":
		path = "/sudoku?puzzle=" + puzzle[:r.IntN(81)]
	case "long-puzzle":
		path = "/sudoku?puzzle=" + puzzle + strings.Repeat("1", 1+r.IntN(2000))
	case "conflict":
		b := []byte(puzzle)
		b[0], b[1] = '5', '5'
		path = "/sudoku?puzzle=" + string(b)
	case "unsolvable":
		// A grid whose first row forces no place for the 9 in cell 9.
		path = "/sudoku?puzzle=12345678" + "0" + strings.Repeat("0", 8) + "9" + strings.Repeat("0", 63)
	case "huge-id":
		path += "&id=" + strings.Repeat(string(rune('a'+r.IntN(26))), 100+r.IntN(20000))
	case "bad-percent":
		bad := []string{"%", "%z", "%zz", "%0", "%%", "%G1", "%ff%fe", "%00", "%c0%af", "%ed%a0%80"}
		path = "/sudoku?puzzle=" + puzzle[:40] + bad[r.IntN(len(bad))] + puzzle[41:] + "&id=" + bad[r.IntN(len(bad))]
		if r.IntN(3) == 0 {
			path = "/sudoku" + bad[r.IntN(len(bad))] + "?puzzle=" + puzzle
		}
	case "bad-host":
		hosts := []string{"a%zz", "[::1", "", "..", "a b", "x:99999", "[::1]:x", strings.Repeat("h", 5000), "ex\x01ample", "ħost", "@", "a/b", "localhost:0"}
		host = hosts[r.IntN(len(hosts))]
	case "nul-uri":
		path = "/sudoku?puzzle=" + puzzle[:30] + "\x00" + puzzle[31:]
		if r.IntN(2) == 0 {
			path = "/sudoku?puzzle=" + puzzle[:30] + "%00" + puzzle[31:]
		}
	case "nul-header":
		headers = append(headers, "X-Junk: a\x00b", "Accept: text/\x00plain")
	case "huge-uri":
		path = "/sudoku?puzzle=" + puzzle + "&x=" + strings.Repeat("A", 9000+r.IntN(100000))
	case "huge-header":
		headers = append(headers, "X-Big: "+strings.Repeat("B", 9000+r.IntN(50000)))
	case "many-headers":
		for i := 0; i < 200+r.IntN(2000); i++ {
			headers = append(headers, fmt.Sprintf("X-H%d: %d", i, i))
		}
	case "huge-body":
		method = "POST"
		path = "/sudoku"
		n := (1 << 20) + r.IntN(1<<20)
		body = []byte(strings.Repeat(puzzle+"\n", n/82+1))
	case "batch-garbage":
		method = "POST"
		path = "/sudoku"
		var b strings.Builder
		for i := 0; i < 1+r.IntN(50); i++ {
			switch r.IntN(4) {
			case 0:
				b.WriteString(strconv.Itoa(r.IntN(1e9)) + ":" + puzzle + "\n")
			case 1:
				b.WriteString(strings.Repeat(":", r.IntN(100)) + "\n")
			case 2:
				for j := 0; j < r.IntN(200); j++ {
					b.WriteByte(byte(r.IntN(256)))
				}
				b.WriteString("\n")
			default:
				b.WriteString(puzzle[:r.IntN(81)] + "\r\n")
			}
		}
		body = []byte(b.String())
	case "batch-huge-lines":
		method = "POST"
		path = "/sudoku"
		body = []byte(strings.Repeat("x", 100000+r.IntN(500000)) + "\n")
	case "bad-method":
		ms := []string{"PUT", "DELETE", "PATCH", "TRACE", "CONNECT", "FOO", "G\x00ET", "OPTIONS", "HEAD"}
		method = ms[r.IntN(len(ms))]
	case "bad-version":
		v := []string{"HTTP/9.9", "HTTP/1.x", "HTTP/0.9", "http/1.1", "HTTP/1.1 extra"}
		return kind, []byte(fmt.Sprintf("GET %s %s\r\nHost: localhost\r\n\r\n", path, v[r.IntN(len(v))]))
	case "dup-params":
		path = "/sudoku?puzzle=" + puzzle + "&puzzle=" + puzzle[:10] + "&id=1&id=2&unique=1&unique=x"
	case "unicode":
		path = "/sudoku?puzzle=" + strings.Repeat("\u00e9", 81) + "&id=%E2%9C%93"
	case "format-text":
		path += "&format=" + []string{"text", "xml", "", strings.Repeat("t", 3000)}[r.IntN(4)]
		headers = append(headers, "Accept: "+[]string{"text/plain", "*/*;q=x", "text/plain;" + strings.Repeat("a=b;", 500)}[r.IntN(3)])
	case "stats-junk":
		path = "/sudoku/stats?" + strings.Repeat("a=%zz&", 1+r.IntN(100))
	case "chunked-junk":
		method = "POST"
		path = "/sudoku"
		headers = append(headers, "Transfer-Encoding: chunked")
		body = []byte([]string{"zz\r\nabc\r\n0\r\n\r\n", "ffffffffffffffff\r\nx\r\n", "5\r\nab", "-1\r\n\r\n"}[r.IntN(4)])
	case "bad-content-length":
		method = "POST"
		path = "/sudoku"
		cl := []string{"-1", "abc", "99999999999999999999", "10, 20", "1e3"}
		headers = append(headers, "Content-Length: "+cl[r.IntN(len(cl))])
		body = []byte(puzzle + "\n")
		return kind, buildRaw(method, path, host, headers, body, false)
	}
	return kind, buildRaw(method, path, host, headers, body, true)
}

func pctEncodeSome(r *rand.Rand, b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		if c > ' ' && c < 0x7f && c != '%' && c != '&' && c != '#' && c != '+' && r.IntN(4) != 0 {
			sb.WriteByte(c)
		} else {
			fmt.Fprintf(&sb, "%%%02X", c)
		}
	}
	return sb.String()
}

func buildRaw(method, path, host string, headers []string, body []byte, withLength bool) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", method, path, host)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	if body != nil && withLength && !strings.Contains(strings.Join(headers, "\n"), "Transfer-Encoding") {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	return append([]byte(b.String()), body...)
}

// rawExchange sends req on a new connection to addr and returns the
// response status (0 when no response came) and the body's first bytes.
func rawExchange(ctx context.Context, addr string, req []byte, timeout time.Duration) (int, error) {
	d := net.Dialer{Timeout: 3 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	// Write in the background: nginx may answer (413, 400) and close
	// before it read everything.
	go func() { conn.Write(req) }()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// hostileInput: 10,000 fuzzed requests through nginx.
func hostileInput(ctx context.Context, s *suite) result {
	var c checks
	ids, before, err := s.workerStates(ctx)
	if err != nil {
		return c.abort(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", s.cfg.HTTPPort)
	const total = 10000
	var (
		mu       sync.Mutex
		byStatus = map[int]int{}
		badKinds = map[string]int{} // kinds that got a 5xx other than 503
		noResp   = map[string]int{}
		next     atomic.Int64
		wg       sync.WaitGroup
	)
	t0 := time.Now()
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				i := next.Add(1)
				if i > total || ctx.Err() != nil {
					return
				}
				kind, req := hostileRequest(r, s.puzzles)
				// Longer than nginx's client_header/body_timeout (10s), so a request
				// nginx waits on (an unfinished chunked body) gets its 408.
				st, err := rawExchange(ctx, addr, req, 15*time.Second)
				mu.Lock()
				byStatus[st]++
				if st >= 500 && st != 503 {
					badKinds[fmt.Sprintf("%s->%d", kind, st)]++
				}
				if err != nil && st == 0 {
					noResp[kind]++
				}
				mu.Unlock()
				if i%2000 == 0 {
					fmt.Fprintf(s.out, "    hostile: %d/%d sent, %v\n", i, total, time.Since(t0).Round(time.Second))
				}
			}
		}(w)
	}
	wg.Wait()
	bad := 0
	for k, v := range byStatus {
		if k >= 500 && k != 503 {
			bad += v
		}
	}
	after, err := s.st.inspect(ctx, ids...)
	if err != nil {
		return c.abort(err)
	}
	alive := 0
	for i, a := range after {
		if a.State.Running && a.State.Pid == before[i].State.Pid && a.RestartCount == before[i].RestartCount {
			alive++
		}
	}
	// Each worker still answers.
	served := map[string]int{}
	for i := 0; i < 40; i++ {
		st, w, _, err := getOnce(ctx, s.st.baseURL+"/sudoku?puzzle="+s.puzzles[i], 2*time.Second)
		if err == nil && st == 200 {
			served[w]++
		}
	}
	c.fig("%d requests in %v: statuses %s", total, time.Since(t0).Round(time.Second), statusString(byStatus))
	c.fig("5xx other than 503: %d %v; no response: %v", bad, badKinds, noResp)
	c.fig("workers alive (same pid, no restart) %d/%d, serving %d", alive, len(ids), len(served))
	c.want(bad == 0, "%d responses were 5xx other than 503: %v", bad, badKinds)
	c.want(alive == len(ids), "only %d of %d workers alive without a restart", alive, len(ids))
	c.want(len(served) == len(ids), "only %d of %d workers answered afterwards", len(served), len(ids))
	return c.result()
}

func statusString(m map[int]int) string {
	var keys []int
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		name := strconv.Itoa(k)
		if k == 0 {
			name = "none"
		}
		parts = append(parts, fmt.Sprintf("%s:%d", name, m[k]))
	}
	return strings.Join(parts, " ")
}

// internalEndpoints: metrics, pprof, health and stub_status are never
// reachable through the public port; worker and stub_status ports are not
// published; nginx hides its version.
func internalEndpoints(ctx context.Context, s *suite) result {
	var c checks
	addr := fmt.Sprintf("127.0.0.1:%d", s.cfg.HTTPPort)
	paths := []string{
		"/metrics", "/healthz", "/readyz", "/debug/pprof/", "/debug/pprof/goroutine?debug=1",
		"/debug/pprof/heap", "/debug/free-os-memory", "/stub_status", "/nginx_status", "/status",
		"/sudoku/../metrics", "/sudoku/metrics", "/sudoku/stats/../../metrics", "//metrics",
		"/%6detrics", "/sudoku%2f..%2fmetrics", "/sudoku/debug/pprof/", "/sudoku/stats/../../debug/pprof/",
		"/sudoku/healthz", "/sudoku/readyz", "/sudoku/stub_status", "/./metrics", "/METRICS",
		"/sudoku/stats/..%2f..%2fmetrics", "/sudoku;/../metrics", "/sudoku/stats%00/../../metrics",
	}
	markers := []string{"go_goroutines", "# HELP", "# TYPE", "Active connections", "Reading:", "goroutine profile",
		"Types of profiles", "process_resident_memory_bytes", "sudoku_requests_total", `"ready"`, "ok\n"}
	var leaks []string
	hosts := []string{"localhost", "sudoku:9001", "127.0.0.1:8082", "nginx:8082"}
	n := 0
	for _, p := range paths {
		for _, h := range hosts {
			for _, m := range []string{"GET", "POST"} {
				req := []byte(fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", m, p, h))
				st, body, err := rawExchangeBody(ctx, addr, req)
				n++
				if err != nil {
					continue
				}
				leak := st >= 200 && st < 300
				for _, mk := range markers {
					if strings.Contains(body, mk) {
						leak = true
					}
				}
				if leak {
					leaks = append(leaks, fmt.Sprintf("%s %s (Host %s) -> %d", m, p, h, st))
				}
			}
		}
	}
	// Absolute-form request targets naming internal listeners.
	for _, u := range []string{"http://sudoku:9001/metrics", "http://127.0.0.1:8082/stub_status", "http://localhost:9001/debug/pprof/"} {
		st, body, err := rawExchangeBody(ctx, addr, []byte("GET "+u+" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"))
		n++
		if err == nil && (st < 300 && st >= 200 || strings.Contains(body, "go_goroutines") || strings.Contains(body, "Active connections")) {
			leaks = append(leaks, fmt.Sprintf("GET %s -> %d", u, st))
		}
	}
	c.fig("%d probes of internal paths through the public port, %d reachable", n, len(leaks))
	c.want(len(leaks) == 0, "reachable through the public port: %s", strings.Join(leaks, ", "))

	// The public routes do answer (a leak test that cannot fail is no test).
	st, _, _, err := getOnce(ctx, s.st.baseURL+"/sudoku/stats", 2*time.Second)
	c.want(err == nil && st == 200, "/sudoku/stats through nginx: %d %v", st, err)

	// Published ports.
	var all []string
	for _, svc := range []string{"sudoku", "nginx", "exporter"} {
		ids, _ := s.st.containers(ctx, svc, false)
		all = append(all, ids...)
	}
	sts, err := s.st.inspect(ctx, all...)
	if err != nil {
		return c.abort(err)
	}
	var published []string
	for _, cs := range sts {
		svc := cs.Config.Labels["com.docker.compose.service"]
		for port, binds := range cs.NetworkSettings.Ports {
			for _, b := range binds {
				if b.HostPort == "" {
					continue
				}
				published = append(published, fmt.Sprintf("%s %s->%s:%s", svc, port, b.HostIP, b.HostPort))
				internal := svc == "sudoku" || strings.HasPrefix(port, "8082/") || strings.HasPrefix(port, "9000/") || strings.HasPrefix(port, "9001/")
				c.want(!internal, "internal port published: %s %s -> %s:%s", svc, port, b.HostIP, b.HostPort)
			}
		}
	}
	sort.Strings(published)
	c.fig("published: %s", strings.Join(published, ", "))

	// server_tokens off.
	resp, err := http.Get(s.st.baseURL + "/nope")
	if err == nil {
		resp.Body.Close()
		server := resp.Header.Get("Server")
		c.fig("Server header %q", server)
		c.want(!strings.ContainsAny(server, "0123456789"), "nginx shows its version: Server %q", server)
	}
	return c.result()
}

func rawExchangeBody(ctx context.Context, addr string, req []byte) (int, string, error) {
	d := net.Dialer{Timeout: 3 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(req); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, "", err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, string(b), nil
}
