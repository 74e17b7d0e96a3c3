package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sudoku-fcgi/cmd/cli"
)

var update = flag.Bool("update", false, "rewrite golden files")

const (
	puzzleFile   = "load/testdata/puzzles.txt"
	solutionFile = "load/testdata/solutions.txt"
)

// fakeWorker answers GET /sudoku from the known solutions.
func fakeWorker(t *testing.T) string {
	t.Helper()
	sols := map[string]string{}
	pf, err := os.ReadFile(puzzleFile)
	if err != nil {
		t.Fatal(err)
	}
	sf, err := os.ReadFile(solutionFile)
	if err != nil {
		t.Fatal(err)
	}
	ps, ss := strings.Fields(string(pf)), strings.Fields(string(sf))
	for i := range ps {
		sols[ps[i]] = ss[i]
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		sol, ok := sols[q.Get("puzzle")]
		if !ok {
			http.Error(w, `{"error":"unknown"}`, http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"id": q.Get("id"), "puzzle": q.Get("puzzle"), "solution": sol})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// shape replaces every value of a decoded JSON document by its type, and
// keeps one element of each array: the schema without the measurements.
func shape(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			out[k] = shape(e)
		}
		return out
	case []any:
		if len(v) == 0 {
			return []any{}
		}
		return []any{shape(v[0])}
	case float64:
		return "number"
	case string:
		return "string"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// The -json result has a stable schema: every mode gives the same keys (the
// mode's own part is an object, the others null), checked against a golden
// file.
func TestJSONSchema(t *testing.T) {
	url := fakeWorker(t)
	modes := map[string][]string{
		"load":     {"load", "-rate", "100", "-duration", "300ms", "-c", "4"},
		"batch":    {"batch", "-c", "4"},
		"stress":   {"stress", "-n", "50", "-duration", "2s"},
		"capacity": {"capacity", "-rate", "50", "-max-rate", "100", "-duration", "200ms", "-p99", "1s"},
		"local":    {"local", "-n", "2"},
	}
	var names []string
	for n := range modes {
		names = append(names, n)
	}
	sort.Strings(names)
	var got bytes.Buffer
	for _, name := range names {
		args := append(modes[name], "-json", "-progress=false", "-url", url, "-in", puzzleFile)
		var out bytes.Buffer
		if err := run(context.Background(), args, env(nil), &out); err != nil {
			t.Fatalf("run(%q): %v", args, err)
		}
		var doc map[string]any
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("run(%q) wrote invalid JSON: %v\n%s", args, err, out.Bytes())
		}
		for _, k := range []string{"sent", "received", "wrong", "errors", "latency_ms"} {
			if _, ok := doc[k]; !ok {
				t.Errorf("run(%q): JSON lacks %q", args, k)
			}
		}
		if doc["mode"] != name {
			t.Errorf("run(%q): mode = %v", args, doc["mode"])
		}
		// The mode's own part is an object; normalise it to compare the
		// shared schema, and add it to the golden file by mode.
		own := map[string]any{}
		for _, k := range []string{"capacity", "stress", "local", "schedule_lag_ms"} {
			if doc[k] != nil {
				own[k] = shape(doc[k])
			}
		}
		delete(doc, "mode")
		shared := shape(doc).(map[string]any)
		for _, k := range []string{"capacity", "stress", "local", "schedule_lag_ms"} {
			shared[k] = "object or null"
		}
		b, _ := json.MarshalIndent(map[string]any{"mode": name, "result": shared, "own": own}, "", "  ")
		got.Write(b)
		got.WriteByte('\n')
	}
	golden := filepath.Join("testdata", "result.schema.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("JSON schema changed (run with -update if intended):\n got:\n%s\nwant:\n%s", got.Bytes(), want)
	}
}

func TestHTMLReportIsSelfContained(t *testing.T) {
	url := fakeWorker(t)
	file := filepath.Join(t.TempDir(), "r.html")
	var out bytes.Buffer
	args := []string{"capacity", "-rate", "50", "-max-rate", "100", "-duration", "300ms", "-p99", "5s", "-retries", "3",
		"-progress=false", "-url", url, "-in", puzzleFile, "-html", file}
	if err := run(context.Background(), args, env(nil), &out); err != nil {
		t.Fatalf("run(%q): %v", args, err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if n := strings.Count(page, "<svg"); n < 4 {
		t.Errorf("report has %d SVG plots, want 4 (latency over time, rate, percentiles, capacity)", n)
	}
	// Nothing may be fetched when the page is viewed: no src or href, and
	// no URL other than the SVG namespace and the measured target.
	for _, bad := range []string{"src=", "href=", "<script", "<link", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("report contains %q", bad)
		}
	}
	for _, u := range regexp.MustCompile(`https?://[^"<\s]+`).FindAllString(page, -1) {
		if u != "http://www.w3.org/2000/svg" && u != url {
			t.Errorf("report mentions URL %q", u)
		}
	}
	if !strings.Contains(out.String(), "capacity  100 requests/s") {
		t.Errorf("text output lacks the capacity line:\n%s", out.String())
	}
}

func TestFlagsAndEnv(t *testing.T) {
	url := fakeWorker(t)
	var out bytes.Buffer
	e := env(map[string]string{"SUDOKU_LOAD_URL": url, "SUDOKU_LOAD_IN": puzzleFile, "SUDOKU_LOAD_JSON": "true",
		"SUDOKU_LOAD_PROGRESS": "false", "SUDOKU_LOAD_C": "3"})
	if err := run(context.Background(), []string{"batch"}, e, &out); err != nil {
		t.Fatalf("run(batch) with env: %v", err)
	}
	var doc struct {
		OK          int `json:"ok"`
		Connections int `json:"connections"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.OK != 20 || doc.Connections != 3 {
		t.Errorf("run(batch) with env = %s (%v), want JSON with ok 20 over 3 connections", out.Bytes(), err)
	}

	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no mode", nil, nil, "no mode"},
		{"unknown mode", []string{"bogus"}, nil, `unknown mode "bogus"`},
		{"no input", []string{"load"}, nil, "-in: no puzzle file"},
		{"missing file", []string{"load", "-in", "nope.txt"}, nil, "nope.txt"},
		{"bad env", []string{"load", "-in", puzzleFile}, map[string]string{"SUDOKU_LOAD_RATE": "fast"}, `"fast" for $SUDOKU_LOAD_RATE`},
		{"zero rate", []string{"load", "-in", puzzleFile, "-rate", "0"}, nil, "-rate must be > 0"},
		{"bad url", []string{"load", "-in", puzzleFile, "-url", "localhost:1"}, nil, "bad URL"},
		{"extra args", []string{"load", "-in", puzzleFile, "x"}, nil, "unexpected argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, env(tc.env), &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

// Wrong answers make the command fail after it printed its report.
func TestWrongAnswersFailTheRun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		_ = json.NewEncoder(w).Encode(map[string]string{"id": q.Get("id"), "puzzle": q.Get("puzzle"), "solution": q.Get("puzzle")})
	}))
	defer srv.Close()
	var out bytes.Buffer
	err := run(context.Background(), []string{"batch", "-progress=false", "-url", srv.URL, "-in", puzzleFile}, env(nil), &out)
	if err == nil || !strings.Contains(err.Error(), "20 wrong answers") {
		t.Errorf("run = %v, want 20 wrong answers", err)
	}
	sc := bufio.NewScanner(&out)
	found := false
	for sc.Scan() {
		found = found || strings.HasPrefix(sc.Text(), "wrong     20")
	}
	if !found {
		t.Errorf("report lacks the wrong count:\n%s", out.String())
	}
}

// -help lists the modes, a mode's -help its flags with their defaults and
// environment twins, and -version prints the version, all on stdout.
func TestHelpAndVersion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-help"}, []string{"Usage: sudoku-load <mode>", "capacity", "stress", "local"}},
		{[]string{"load", "-help"}, []string{"Usage: sudoku-load load [flags]", "-rate float", "(default 1000)", "($SUDOKU_LOAD_RATE)", "($SUDOKU_LOAD_URL)"}},
		{[]string{"-version"}, []string{"sudoku-load, version"}},
		{[]string{"capacity", "-version"}, []string{"sudoku-load capacity, version"}},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), tc.args, env(nil), &out); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("run(%q) = %v, want flag.ErrHelp", tc.args, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("run(%q) wrote no %q:\n%s", tc.args, w, out.String())
			}
		}
	}
}

// Bad command lines are usage errors (exit status 2); a server that cannot
// be reached is not.
func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"bogus"}, {"load"}, {"load", "-in", puzzleFile, "-c", "0"}, {"batch", "-in", puzzleFile, "-b", "-1"}, {"load", "-nope"}} {
		err := run(context.Background(), args, env(nil), &bytes.Buffer{})
		if !errors.As(err, new(*cli.UsageError)) {
			t.Errorf("run(%q) = %v, want a *cli.UsageError", args, err)
		}
	}
	err := run(context.Background(), []string{"load", "-in", puzzleFile, "-url", "http://127.0.0.1:1", "-duration", "100ms", "-rate", "10", "-progress=false"}, env(nil), &bytes.Buffer{})
	if err != nil && errors.As(err, new(*cli.UsageError)) {
		t.Errorf("run against a closed port = %v, want no usage error", err)
	}
}
