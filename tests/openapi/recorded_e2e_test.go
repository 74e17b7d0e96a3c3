//go:build e2e

package openapi

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sudoku-fcgi/nginx/nginxtest"
)

// TestRecordedAnswersMatchDescription validates answers that only a stack
// under stress gives, recorded where the integration suite provokes them
// (a 503 in its overload burst). Each *.http file in SUDOKU_API_RECORDED
// holds the request line ("GET /sudoku?puzzle=...") and then the answer as
// `curl -i` wrote it: status line, headers, blank line, the decoded body.
func TestRecordedAnswersMatchDescription(t *testing.T) {
	dir := nginxtest.RequireEnv(t, "SUDOKU_API_RECORDED", "tests/integration/run.sh", "integration")
	const base = "http://recorded.test"
	router := spec(t, base)
	files, err := filepath.Glob(filepath.Join(dir, "*.http"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded answers (*.http) in %s: %v", dir, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			req, resp, body := readRecorded(t, f, base)
			validate(t, router, req, resp, body)
		})
	}
}

// readRecorded parses one recorded exchange. curl -i writes the headers as
// received and the body decoded, so Transfer-Encoding is dropped instead of
// being applied to the body a second time.
func readRecorded(t *testing.T, file, base string) (*http.Request, *http.Response, []byte) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := bytes.Cut(raw, []byte("\n"))
	method, target, ok := strings.Cut(strings.TrimSpace(string(first)), " ")
	if !ok || !strings.HasPrefix(target, "/") {
		t.Fatalf("%s: first line %q is not METHOD /path", file, first)
	}
	req, err := http.NewRequest(method, base+target, nil)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(rest)))
	status, err := tp.ReadLine()
	if err != nil {
		t.Fatalf("%s: reading the status line: %v", file, err)
	}
	fields := strings.Fields(status)
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "HTTP/") {
		t.Fatalf("%s: status line %q", file, status)
	}
	code, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatalf("%s: status line %q: %v", file, status, err)
	}
	hdr, err := tp.ReadMIMEHeader()
	if err != nil {
		t.Fatalf("%s: reading the headers: %v", file, err)
	}
	body, err := io.ReadAll(tp.R)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header(hdr)
	h.Del("Transfer-Encoding")
	return req, &http.Response{StatusCode: code, Header: h, Request: req}, body
}
