package fcgi

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"sudoku-fcgi/fcgi/fcgiserver"
	"sudoku-fcgi/fcgi/fcgitest"
)

// shippedRequest is a GET of uri as nginx/sudoku-fastcgi.conf sends it
// for Go's HTTP client (sudoku-load): its params and the client's own
// request headers as HTTP_*.
func shippedRequest(uri string) []byte {
	params := map[string]string{
		"REQUEST_METHOD":       "GET",
		"REQUEST_URI":          uri,
		"SERVER_PROTOCOL":      "HTTP/1.1",
		"REMOTE_ADDR":          "127.0.0.1",
		"REMOTE_PORT":          "41234",
		"HTTP_X_REQUEST_ID":    requestID,
		"HTTP_HOST":            "bench",
		"HTTP_PROXY":           "",
		"HTTP_USER_AGENT":      "Go-http-client/1.1",
		"HTTP_ACCEPT_ENCODING": "gzip",
	}
	b := fcgitest.BeginRequest(1, true)
	b = append(b, fcgitest.Record(fcgitest.TypeParams, 1, fcgitest.Pairs(params))...)
	b = append(b, fcgitest.Record(fcgitest.TypeParams, 1, nil)...)
	return append(b, fcgitest.Record(fcgitest.TypeStdin, 1, nil)...)
}

const requestID = "0123456789abcdef0123456789abcdef"

// cpuTime is the CPU this process has spent, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkProtocol is one GET and its answer served two ways over
// loopback TCP, one request at a time on one connection: "fastcgi"
// through fcgiserver and net/http/fcgi's child (the records as nginx sends
// them, shippedRequest), "http" through a net/http server (what
// proxy_pass with upstream keep-alive reaches, make bench-path's anchor).
// The handler is the Service ("service") or one that answers the same
// headers and body size with no work ("fixed"): fixed/fastcgi against
// fixed/http is what the protocol and its server cost apart from the
// Service. cpu-us/op is the process's CPU (client, server and kernel)
// per request, the figure to compare: ns/op waits on wake-ups
// (tests/bench/RESULTS.md, "FastCGI against the anchor").
func BenchmarkProtocol(b *testing.B) {
	uri := "/sudoku?puzzle=" + easy
	body := []byte(`{"puzzle":"` + easy + `","solution":"` + easy + `"}` + "\n")
	handlers := []struct {
		name string
		h    func() http.Handler
	}{
		{"service", func() http.Handler {
			return New(cfg(func(c *Config) { c.WorkerID = "bench"; c.AccessLog = false }), nopLog)
		}},
		{"fixed", func() http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h := w.Header()
				h.Set("Content-Type", "application/json")
				h.Set("X-Sudoku-Worker", "bench")
				w.Write(body)
			})
		}},
	}
	for _, hc := range handlers {
		b.Run(hc.name+"/fastcgi", func(b *testing.B) {
			ln := fcgitest.Listen(b, "tcp", "127.0.0.1:0")
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- fcgiserver.Serve(ctx, ln, hc.h(), opts()) }()
			b.Cleanup(func() { cancel(); <-done })
			c := fcgitest.Dial(b, ln.Addr().String())
			req := shippedRequest(uri)
			protocolLoop(b, func() {
				c.Send(req)
				out, err := c.ReadStdout()
				if err != nil || len(out) < 12 || string(out[:12]) == "Status: 503 " {
					b.Fatalf("answer %.40q, %v", out, err)
				}
			})
		})
		b.Run(hc.name+"/http", func(b *testing.B) {
			ln := fcgitest.Listen(b, "tcp", "127.0.0.1:0")
			srv := &http.Server{Handler: hc.h()}
			go srv.Serve(ln)
			b.Cleanup(func() { srv.Close() })
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { conn.Close() })
			br := bufio.NewReader(conn)
			req := []byte("GET " + uri + " HTTP/1.1\r\nHost: bench\r\nUser-Agent: Go-http-client/1.1\r\nX-Request-Id: " + requestID + "\r\nAccept-Encoding: gzip\r\n\r\n")
			protocolLoop(b, func() {
				if _, err := conn.Write(req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			})
		})
	}
}

// protocolLoop runs one request per iteration and reports the process's
// CPU per request as cpu-us/op.
func protocolLoop(b *testing.B, do func()) {
	b.ReportAllocs()
	for range 100 { // warm: connections, pools, the adaptive goroutine stack
		do()
	}
	start := cpuTime(b)
	n := 0
	for b.Loop() {
		do()
		n++
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(n)/1e3, "cpu-us/op")
}
