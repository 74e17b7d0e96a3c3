//go:build e2e

package openapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"sudoku-fcgi/nginx/nginxtest"
)

const (
	puzzle   = "000000010400000000020000000000050407008000300001090000300400200050100000000806000"
	solution = "693784512487512936125963874932651487568247391741398625319475268856129743274836159"
	// noSolution has no two equal givens in a unit and still no solution.
	noSolution = "000000000040000001000002030000003020001040000005000060030000004070080009620007000"
	// conflict has two 1s in row 1.
	conflict = "11" + "0000010400000000020000000000050407008000300001090000300400200050100000000806000"
)

type exchange struct {
	name    string
	method  string
	target  string // path and query
	accept  string
	body    string
	status  int
	inBody  string // a substring the answer must carry
	noRoute bool   // a path the description has no operation for (405 on a known path)
}

func TestAnswersMatchDescription(t *testing.T) {
	base := nginxtest.RequireEnv(t, "SUDOKU_API_URL", "tests/integration/run.sh", "integration")
	router := spec(t, base)
	client := &http.Client{Timeout: 10 * time.Second}
	long := strings.Repeat("0", 9000)
	cases := []exchange{
		{name: "solve json", method: "GET", target: "/sudoku?puzzle=" + puzzle, status: 200, inBody: solution},
		{name: "solve unique with id", method: "GET", target: "/sudoku?puzzle=" + puzzle + "&unique=1&id=a1", status: 200, inBody: `"unique":true`},
		{name: "solve format text", method: "GET", target: "/sudoku?puzzle=" + puzzle + "&format=text", status: 200, inBody: solution},
		{name: "solve accept text", method: "GET", target: "/sudoku?puzzle=" + puzzle, accept: "text/plain", status: 200, inBody: solution},
		{name: "bad character", method: "GET", target: "/sudoku?puzzle=12x", status: 400, inBody: "cell 3 (row 1, column 3)"},
		{name: "missing puzzle", method: "GET", target: "/sudoku", status: 400, inBody: "puzzle"},
		{name: "conflicting givens", method: "GET", target: "/sudoku?puzzle=" + conflict, status: 400, inBody: "row 1 has two 1s"},
		{name: "no solution", method: "GET", target: "/sudoku?puzzle=" + noSolution, status: 422},
		{name: "method not allowed", method: "DELETE", target: "/sudoku?puzzle=" + puzzle, status: 405, noRoute: true},
		{name: "head", method: "HEAD", target: "/sudoku?puzzle=" + puzzle, status: 200},
		{name: "head bad puzzle", method: "HEAD", target: "/sudoku?puzzle=12x", status: 400},
		{name: "description", method: "GET", target: "/openapi.yaml", status: 200, inBody: "openapi: 3."},
		{name: "stats", method: "GET", target: "/sudoku/stats", status: 200, inBody: `"worker"`},
		{name: "stats method not allowed", method: "POST", target: "/sudoku/stats", body: "x", status: 405, noRoute: true},
		// Issue 31: a route that takes no body refuses one before reading it.
		{name: "stats with a body", method: "GET", target: "/sudoku/stats", body: "x", status: 413, inBody: "takes no request body"},
		{name: "solve with a body", method: "GET", target: "/sudoku?puzzle=" + puzzle, body: "x", status: 413, inBody: "takes no request body"},
		{name: "unknown path", method: "GET", target: "/nope", status: 404, inBody: "/openapi.yaml"},
		{name: "index for a client that is not a browser", method: "GET", target: "/", status: 200, inBody: `"description":"/openapi.yaml"`},
		{name: "description method not allowed", method: "POST", target: "/openapi.yaml", status: 405, noRoute: true},
		{name: "URI too long", method: "GET", target: "/sudoku?puzzle=" + long, status: 414},
		{name: "batch", method: "POST", target: "/sudoku", body: "a:" + puzzle + "\nb:" + noSolution + "\nc:123\n", status: 200, inBody: "a:" + solution},
		{name: "batch too large", method: "POST", target: "/sudoku", body: strings.Repeat(puzzle+"\n", 2<<20/82), status: 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			check(t, client, router, base, c)
		})
	}
	t.Run("rate limited", func(t *testing.T) {
		if os.Getenv("SUDOKU_API_TRUSTED") == "1" {
			t.Skip("SUDOKU_API_TRUSTED=1: nginx exempts this client from its rate limits")
		}
		rateLimited(t, client, router, base)
	})
}

// check sends one request and validates the answer's status, headers and
// body against the description.
func check(t *testing.T, client *http.Client, router routers.Router, base string, c exchange) {
	t.Helper()
	req, err := http.NewRequest(c.method, base+c.target, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	if c.body != "" {
		req.Header.Set("Content-Type", "text/plain")
	}
	if c.accept != "" {
		req.Header.Set("Accept", c.accept)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.target, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", c.method, c.target, err)
	}
	if resp.StatusCode != c.status {
		t.Fatalf("%s %.60s: status %d, want %d; body %.200s", c.method, c.target, resp.StatusCode, c.status, body)
	}
	if !bytes.Contains(body, []byte(c.inBody)) {
		t.Errorf("%s %.60s: body %.300s lacks %q", c.method, c.target, body, c.inBody)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s %.60s: no X-Request-Id", c.method, c.target)
	}
	if c.noRoute {
		// The description lists the methods a path has; another method
		// finds no operation, and its answer must name the allowed ones.
		if resp.Header.Get("Allow") == "" {
			t.Errorf("%s %.60s: 405 without Allow", c.method, c.target)
		}
		req.Method = "GET"
	}
	validate(t, router, req, resp, body)
}

func validate(t *testing.T, router routers.Router, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	route, params, err := router.FindRoute(req)
	if err != nil {
		t.Fatalf("%s %.60s: no operation in the description: %v", req.Method, req.URL.Path, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{ExcludeRequestBody: true, ExcludeRequestQueryParams: true},
		},
		Status:  resp.StatusCode,
		Header:  resp.Header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %.60s -> %d does not match nginx/www/openapi.yaml: %v\nbody: %.300s", req.Method, req.URL.Path, resp.StatusCode, err, body)
	}
}

// rateLimited sends concurrent batch POSTs past the per-client batch limit
// and validates a 429 among the answers.
func rateLimited(t *testing.T, client *http.Client, router routers.Router, base string) {
	var (
		mu   sync.Mutex
		got  *http.Response
		body []byte
		req  *http.Request
		wg   sync.WaitGroup
	)
	for range 150 {
		wg.Go(func() {
			r, _ := http.NewRequest("POST", base+"/sudoku", strings.NewReader(puzzle+"\n"))
			r.Header.Set("Content-Type", "text/plain")
			resp, err := client.Do(r)
			if err != nil {
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			if resp.StatusCode == http.StatusTooManyRequests && got == nil {
				got, body, req = resp, b, r
			}
		})
	}
	wg.Wait()
	if got == nil {
		t.Fatalf("no 429 among 150 concurrent batch POSTs (is this client in SUDOKU_TRUSTED_CLIENTS?)")
	}
	if got.Header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After")
	}
	validate(t, router, req, got, body)
}
