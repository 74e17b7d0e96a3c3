package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/cmd/sudoku-load/load"
)

var update = flag.Bool("update", false, "rewrite golden files")

const (
	puzzleFile   = "load/testdata/puzzles.txt"
	solutionFile = "load/testdata/solutions.txt"
)

// fakeWorker answers GET /sudoku from the known solutions.
func fakeWorker(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(fakeHandler(t))
	t.Cleanup(srv.Close)
	return srv.URL
}

// fakeHandler is fakeWorker's handler.
func fakeHandler(t *testing.T) http.Handler {
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
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		sol, ok := sols[q.Get("puzzle")]
		if !ok {
			http.Error(w, `{"error":"unknown"}`, http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"id": q.Get("id"), "puzzle": q.Get("puzzle"), "solution": sol})
	})
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
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
		"capacity": {"capacity", "-rate", "50", "-max-rate", "100", "-duration", "200ms", "-p99", "1s", "-retries", "3", "-peak", "1000"},
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
		for _, k := range []string{"capacity", "stress", "local", "schedule_lag_ms", "failed", "resent_after"} {
			if doc[k] != nil {
				own[k] = shape(doc[k])
			}
		}
		delete(doc, "mode")
		shared := shape(doc).(map[string]any)
		for _, k := range []string{"capacity", "stress", "local", "schedule_lag_ms", "failed", "resent_after"} {
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
	// -max-rate passed, so 100/s is only a lower bound.
	if !strings.Contains(out.String(), "capacity  at least 100 requests/s") {
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

// Wrong answers break the -max-wrong threshold (0 by default) after the
// report is printed; -max-wrong -1 accepts them.
func TestWrongAnswersFailTheRun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		_ = json.NewEncoder(w).Encode(map[string]string{"id": q.Get("id"), "puzzle": q.Get("puzzle"), "solution": q.Get("puzzle")})
	}))
	defer srv.Close()
	var out bytes.Buffer
	args := []string{"batch", "-progress=false", "-url", srv.URL, "-in", puzzleFile}
	err := run(context.Background(), args, env(nil), &out)
	if !errors.As(err, new(*load.ThresholdError)) || !strings.Contains(err.Error(), "max-wrong: measured 20, limit 0") {
		t.Errorf("run(%q) = %v, want a threshold error with 20 wrong answers", args, err)
	}
	if err := run(context.Background(), append(args, "-max-wrong", "-1", "-max-error-ratio", "1"), env(nil), &bytes.Buffer{}); err != nil {
		t.Errorf("run(%q -max-wrong -1 -max-error-ratio 1) = %v, want nil", args, err)
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
		{[]string{"load", "-help"}, []string{"Usage: sudoku-load load [flags]", "-rate float", "(default 1000)", "($SUDOKU_LOAD_RATE)", "($SUDOKU_LOAD_URL)",
			"-max-p99 duration", "($SUDOKU_LOAD_MAX_P99)", "-max-error-ratio ratio", "($SUDOKU_LOAD_MAX_ERROR_RATIO)", "($SUDOKU_LOAD_MAX_WRONG)", "3 the run broke a threshold"}},
		{[]string{"capacity", "-help"}, []string{"at least N requests/s", "machines  = ceil(cores / -machine-cores) + -spare",
			"($SUDOKU_LOAD_PEAK)", "($SUDOKU_LOAD_UTILISATION)", "($SUDOKU_LOAD_MACHINE_CORES)", "($SUDOKU_LOAD_SPARE)", "($SUDOKU_LOAD_MAX_WRONG)"}},
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
	for _, args := range [][]string{nil, {"bogus"}, {"load"}, {"load", "-in", puzzleFile, "-c", "0"}, {"batch", "-in", puzzleFile, "-b", "-1"}, {"batch", "-in", puzzleFile, "-b", "5", "-retry", "-1"}, {"load", "-nope"}} {
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

// busyWorker answers every request with 503, as a full pool does.
func busyWorker(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"busy"}`, http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// slowWorker is fakeWorker with every answer delayed by d.
func slowWorker(t *testing.T, d time.Duration) string {
	t.Helper()
	h := fakeHandler(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(d)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A broken threshold fails the run with a *load.ThresholdError that names it
// and its measured value, after the report; a kept one does not.
func TestThresholds(t *testing.T) {
	good, busy, slow := fakeWorker(t), busyWorker(t), slowWorker(t, 30*time.Millisecond)
	base := []string{"-progress=false", "-in", puzzleFile}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string // a breach in the error; empty: the run passes
	}{
		{"load within", []string{"load", "-url", good, "-rate", "50", "-duration", "200ms", "-max-p99", "10s", "-max-error-ratio", "0"}, nil, ""},
		{"load slow", []string{"load", "-url", slow, "-rate", "50", "-duration", "200ms", "-max-p99", "10ms"}, nil, "max-p99: measured "},
		{"load slow, from env", []string{"load", "-url", slow, "-rate", "50", "-duration", "200ms"}, map[string]string{"SUDOKU_LOAD_MAX_P99": "10ms"}, "limit 10ms"},
		{"batch busy", []string{"batch", "-url", busy, "-max-error-ratio", "0.001"}, nil, "max-error-ratio: measured 1 (20 of 20), limit 0.001"},
		{"batch busy, no threshold", []string{"batch", "-url", busy}, nil, ""},
		{"stress busy", []string{"stress", "-url", busy, "-n", "20", "-duration", "2s"}, map[string]string{"SUDOKU_LOAD_MAX_ERROR_RATIO": "0.5"}, "max-error-ratio: measured 1"},
		{"stress within", []string{"stress", "-url", good, "-n", "20", "-duration", "2s", "-max-p99", "10s", "-max-error-ratio", "0"}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.args, base...)
			var out bytes.Buffer
			err := run(context.Background(), args, env(tc.env), &out)
			if !strings.Contains(out.String(), "latency") {
				t.Errorf("run(%q) printed no report:\n%s", args, out.String())
			}
			if tc.want == "" {
				if err != nil {
					t.Errorf("run(%q) = %v, want nil", args, err)
				}
				return
			}
			if !errors.As(err, new(*load.ThresholdError)) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v, want a *load.ThresholdError containing %q", args, err, tc.want)
			}
		})
	}
}

func TestThresholdUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"load", "-max-error-ratio", "2"}, "want a share from 0 to 1"},
		{[]string{"load", "-max-error-ratio", "-0.1"}, "want a share from 0 to 1"},
		{[]string{"batch", "-max-p99", "fast"}, "invalid value"},
		{[]string{"stress", "-no-read", "-max-p99", "5ms"}, "cannot be used with -no-read"},
		{[]string{"capacity", "-max-p99", "5ms"}, "not defined: -max-p99"}, // capacity's objective is -p99
		{[]string{"capacity", "-utilisation", "1.5"}, "-utilisation must be at most 1"},
		{[]string{"capacity", "-machine-cores", "0"}, "-machine-cores must be > 0"},
	} {
		args := append(tc.args, "-in", puzzleFile, "-url", "http://127.0.0.1:1", "-progress=false")
		err := run(context.Background(), args, env(nil), &bytes.Buffer{})
		if !errors.As(err, new(*cli.UsageError)) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want a usage error containing %q", args, err, tc.want)
		}
	}
}

// A threshold error, wrapped or not, is a cli.ExitCoder with status 3, so
// cli.Main exits 3 with its message (cli's tests check that mapping).
func TestThresholdExitCode(t *testing.T) {
	breach := &load.ThresholdError{Breaches: []load.Breach{{Name: "max-p99", Measured: "7ms", Limit: "5ms"}}}
	for _, err := range []error{breach, fmt.Errorf("wrapped: %w", breach)} {
		ec, ok := errors.AsType[cli.ExitCoder](err)
		if !ok || ec.ExitCode() != 3 {
			t.Errorf("%v: ExitCoder %v, want one with status 3", err, ok)
		}
		if want := "threshold failed: max-p99: measured 7ms, limit 5ms"; !strings.Contains(err.Error(), want) {
			t.Errorf("error %q, want it to contain %q", err, want)
		}
	}
}

// capacity -peak puts the plan, with the rule's flags and their env twins,
// in the JSON result and prints it as a table.
func TestCapacityPlanFlags(t *testing.T) {
	url := fakeWorker(t)
	args := []string{"capacity", "-rate", "50", "-max-rate", "100", "-duration", "200ms", "-p99", "5s", "-retries", "3",
		"-progress=false", "-url", url, "-in", puzzleFile, "-cores", "2", "-peak", "1000", "-utilisation", "0.5"}
	e := env(map[string]string{"SUDOKU_LOAD_MACHINE_CORES": "4", "SUDOKU_LOAD_SPARE": "2"})
	var out bytes.Buffer
	if err := run(context.Background(), append(args, "-json"), e, &out); err != nil {
		t.Fatalf("run(%q): %v", args, err)
	}
	var doc struct{ Capacity load.Capacity }
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("run(%q) wrote invalid JSON: %v", args, err)
	}
	c, p := doc.Capacity, doc.Capacity.Plan
	if p == nil || c.Rate == 0 {
		t.Fatalf("run(%q): capacity %+v without a plan", args, c)
	}
	want := load.Plan{Peak: 1000, Utilisation: 0.5, MachineCores: 4, Spare: 2, PerCore: c.Rate / 2, Planned: c.Rate / 4,
		Cores: int(math.Ceil(1000 / (c.Rate / 2 * 0.5))), AtLeast: c.AtLeast}
	want.Machines = (want.Cores+3)/4 + 2
	want.Provisioned = 4 * want.Machines
	if *p != want {
		t.Errorf("run(%q): plan %+v, want %+v", args, *p, want)
	}
	out.Reset()
	if err := run(context.Background(), args, e, &out); err != nil {
		t.Fatalf("run(%q): %v", args, err)
	}
	if !strings.Contains(out.String(), "plan for a peak of 1000 requests/s: each core at most 50% of its measured rate at the peak, N+2 machines of 4 cores") {
		t.Errorf("run(%q) printed no plan table:\n%s", args, out.String())
	}
}
