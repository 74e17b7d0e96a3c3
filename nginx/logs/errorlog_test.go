package logs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/rs/zerolog"
)

func TestLineKind(t *testing.T) {
	tests := []struct{ line, want string }{
		{`2026/11/30 15:48:15 [error] 31#31: *1234 no live upstreams while connecting to upstream, client: 172.18.0.1, server: _, request: "GET /sudoku?puzzle=1 HTTP/1.1", upstream: "fastcgi://sudoku_workers", host: "x"` + "\n",
			"[error] no live upstreams while connecting to upstream"},
		{`2026/11/30 15:48:16 [error] 32#32: *99 no live upstreams while connecting to upstream, client: 10.0.0.9, server: _, request: "GET /sudoku?puzzle=2 HTTP/1.1"` + "\n",
			"[error] no live upstreams while connecting to upstream"},
		{`2026/11/30 15:48:15 [notice] 1#1: signal process started` + "\n", "[notice] signal process started"},
		{"nginx: [emerg] unknown directive \"foo\"\n", `[emerg] unknown directive "foo"`},
		{"no brackets at all\n", "no brackets at all"},
		{"odd ] then [ order\n", "odd ] then [ order"},
	}
	for _, tt := range tests {
		if got := string(lineKind([]byte(tt.line))); got != tt.want {
			t.Errorf("lineKind(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

func noLiveUpstreams(conn int) string {
	return fmt.Sprintf("2026/11/30 15:48:15 [error] 31#31: *%d no live upstreams while connecting to upstream, client: 10.0.%d.1, server: _, request: \"GET /sudoku?puzzle=%d HTTP/1.1\"\n", conn, conn%250, conn)
}

func TestErrorLogPassesDistinctLinesAsTheyAre(t *testing.T) {
	in := "2026/11/30 15:48:15 [notice] 1#1: using the \"epoll\" event method\n" +
		"2026/11/30 15:48:15 [warn] 30#30: *1 limiting requests, excess: 100.5 by zone \"sudoku_req\", client: 10.0.0.1\n" +
		strings.Repeat("x", 40<<10) + "\n" + // longer than the read buffer
		"no newline at the end"
	var out, log bytes.Buffer
	e := &ErrorLogRelay{Out: &out, Log: zerolog.New(&log)}
	if err := e.Relay(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if out.String() != in {
		t.Errorf("relayed %d bytes, want the %d given unchanged", out.Len(), len(in))
	}
	if log.Len() != 0 {
		t.Errorf("summaries for lines that were all passed: %s", log.String())
	}
}

func TestErrorLogHoldsBackAFloodOfOneKind(t *testing.T) {
	var in strings.Builder
	for i := range 1000 {
		in.WriteString(noLiveUpstreams(i))
		if i == 500 {
			in.WriteString("2026/11/30 15:48:15 [error] 31#31: *7 upstream timed out (110: Connection timed out) while reading response header from upstream, client: 10.0.0.1\n")
		}
	}
	var out, log bytes.Buffer
	e := &ErrorLogRelay{Out: &out, Log: zerolog.New(&log), Burst: 5, Window: time.Hour}
	if err := e.Relay(strings.NewReader(in.String())); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("relayed %d lines, want the first 5 of the flood and the other kind:\n%s", len(lines), out.String())
	}
	for i := range 5 {
		if lines[i] != strings.TrimSuffix(noLiveUpstreams(i), "\n") {
			t.Errorf("line %d = %q, want the flood's line %d", i, lines[i], i)
		}
	}
	if !strings.Contains(lines[5], "upstream timed out") {
		t.Errorf("the other kind's line was held back: %q", lines[5])
	}
	var sum struct {
		Level    string `json:"level"`
		Kind     string `json:"kind"`
		HeldBack int    `json:"held_back"`
		Passed   int    `json:"passed"`
		Message  string `json:"message"`
	}
	if err := json.Unmarshal(log.Bytes(), &sum); err != nil {
		t.Fatalf("summary %q: %v", log.String(), err)
	}
	if sum.Kind != "[error] no live upstreams while connecting to upstream" || sum.HeldBack != 995 || sum.Passed != 5 || sum.Level != "warn" {
		t.Errorf("summary = %+v, want 995 held back and 5 passed of the flood's kind", sum)
	}
}

func TestErrorLogStartsAWindowAfterTheLast(t *testing.T) {
	r, w := io.Pipe()
	var out bytes.Buffer // read once Relay has returned
	logs := make(lineWriter, 16)
	e := &ErrorLogRelay{Out: &out, Log: zerolog.New(logs), Burst: 2, Window: 200 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- e.Relay(r) }()
	// One write: the window starts at the first line and the other four
	// follow within microseconds.
	var flood strings.Builder
	for i := range 5 {
		flood.WriteString(noLiveUpstreams(i))
	}
	w.Write([]byte(flood.String()))
	// The ticker ends the window without another line.
	timeout := time.After(5 * time.Second)
	for summary := ""; !strings.Contains(summary, `"held_back":3`); {
		select {
		case summary = <-logs:
		case <-timeout:
			t.Fatalf("no summary after the window; last log record %q", summary)
		}
	}
	w.Write([]byte(noLiveUpstreams(5)))
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 3 {
		t.Errorf("relayed %d lines, want 2 in the first window and 1 in the next:\n%s", n, out.String())
	}
}

// lineWriter sends every write, one zerolog record, to its channel: the
// relay's ticker writes summaries while the test waits for them.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

// TestLimitedZone: nginx's lines for a request a limit turned away name
// their zone; other lines, a dry run among them, name none.
func TestLimitedZone(t *testing.T) {
	for line, want := range map[string]string{
		`2026/12/03 08:40:20 [warn] 31#31: *8 limiting requests, excess: 200.010 by zone "sudoku_req", client: 203.0.113.3, server: _, request: "GET /sudoku HTTP/1.1", host: "x"`: "sudoku_req",
		`2026/12/03 08:40:20 [warn] 31#31: *9 limiting connections by zone "sudoku_client_conn", client: 203.0.113.1, server: _, request: "GET /sudoku?n=65 HTTP/1.1", host: "x"`:  "sudoku_client_conn",
		`2026/12/03 08:40:20 [warn] 31#31: *9 limiting requests, dry run, excess: 1.000 by zone "sudoku_req", client: 203.0.113.1`:                                                 "",
		`2026/12/03 08:40:20 [error] 31#31: *2 upstream prematurely closed connection while reading upstream, client: 127.0.0.1`:                                                   "",
		`a line in no shape by zone "x"`: "",
	} {
		if got, ok := limitedZone([]byte(line)); got != want || ok != (want != "") {
			t.Errorf("limitedZone(%.60q) = %q, %v; want %q", line, got, ok, want)
		}
	}
}

// TestConnectFailed: nginx's lines for a connect to a worker that failed
// wake discovery, through the relay; a busy unix socket's full backlog and
// other lines do not.
func TestConnectFailed(t *testing.T) {
	lines := map[string]bool{
		`2026/12/04 10:30:39 [error] 146#146: *5763 upstream timed out (110: Connection timed out) while connecting to upstream, client: 172.25.0.1, upstream: "fastcgi://10.0.1.3:9000"`: true,
		`2026/12/04 10:30:39 [error] 146#146: *5 connect() failed (113: No route to host) while connecting to upstream, client: 172.25.0.1, upstream: "fastcgi://10.0.1.3:9000"`:          true,
		`2026/12/04 10:30:39 [error] 146#146: *6 connect() failed (111: Connection refused) while connecting to upstream, client: 172.25.0.1, upstream: "fastcgi://10.0.1.3:9000"`:        true,
		`2026/12/04 10:30:39 [error] 146#146: *7 connect() to unix:/run/sudoku/w1.sock failed (11: Resource temporarily unavailable) while connecting to upstream, client: 127.0.0.1`:     false,
		`2026/12/04 10:30:39 [error] 146#146: *8 upstream prematurely closed connection while reading upstream, client: 127.0.0.1`:                                                        false,
	}
	for line, want := range lines {
		if got := connectFailed([]byte(line)); got != want {
			t.Errorf("connectFailed(%.90q) = %v, want %v", line, got, want)
		}
	}
	var woken int
	relay := &ErrorLogRelay{Out: io.Discard, Log: zerolog.Nop(), Unreachable: func() { woken++ }}
	var in strings.Builder
	for line := range lines {
		in.WriteString(line + "\n")
	}
	if err := relay.Relay(strings.NewReader(in.String())); err != nil {
		t.Fatal(err)
	}
	if woken != 3 {
		t.Errorf("Unreachable called %d times for 3 failed connects", woken)
	}
}

// TestCopyLinesWritesWholeLines: lines that reads split anywhere reach the
// writer in writes that end at a line's end, and a line longer than the
// buffer goes in parts, nothing lost.
func TestCopyLinesWritesWholeLines(t *testing.T) {
	var in strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&in, `{"n":%d,"pad":"%s"}`+"\n", i, strings.Repeat("p", i%300))
	}
	long := strings.Repeat("L", 40<<10) + "\n"
	in.WriteString(long)
	in.WriteString("no newline at the end")
	var writes []string
	w := writerFunc(func(p []byte) (int, error) { writes = append(writes, string(p)); return len(p), nil })
	if err := CopyLines(w, iotest.HalfReader(strings.NewReader(in.String()))); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(writes, ""); got != in.String() {
		t.Fatalf("copied %d bytes, want %d the same", len(got), in.Len())
	}
	cut := 0
	for _, p := range writes[:len(writes)-1] {
		if !strings.HasSuffix(p, "\n") {
			cut++
		}
	}
	if want := len(long) / (16 << 10); cut != want {
		t.Errorf("%d writes ended inside a line, want %d (the parts of the one line longer than the buffer)", cut, want)
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
