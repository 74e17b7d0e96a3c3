package cli

import (
	"bytes"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"sudoku-fcgi/solver"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func newTestSet(out *bytes.Buffer) (*FlagSet, *string, *int, *time.Duration) {
	fs := NewFlagSet("sudoku-load batch", "Sends puzzles in batches.", out)
	url := fs.String("url", "http://127.0.0.1:8080", "base `URL` of the service")
	c := fs.Int("c", 32, "requests in flight")
	d := fs.Duration("duration", 0, "how long to run (0: until the input ends)")
	return fs, url, c, d
}

func TestParseEnvTwins(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantURL string
		wantC   int
		wantD   time.Duration
	}{
		{"defaults", nil, nil, "http://127.0.0.1:8080", 32, 0},
		{"env", nil, map[string]string{"SUDOKU_LOAD_URL": "http://x", "SUDOKU_LOAD_C": "4", "SUDOKU_LOAD_DURATION": "2s"}, "http://x", 4, 2 * time.Second},
		{"flag wins", []string{"-c", "8"}, map[string]string{"SUDOKU_LOAD_C": "4"}, "http://127.0.0.1:8080", 8, 0},
		{"other prefix ignored", nil, map[string]string{"SUDOKU_C": "4", "C": "5"}, "http://127.0.0.1:8080", 32, 0},
		// A twin set to the empty string sets the empty value, not the default.
		{"empty env", nil, map[string]string{"SUDOKU_LOAD_URL": ""}, "", 32, 0},
		{"flag wins over empty env", []string{"-url", "http://y"}, map[string]string{"SUDOKU_LOAD_URL": ""}, "http://y", 32, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			fs, url, c, d := newTestSet(&out)
			if err := fs.Parse(tt.args, env(tt.env)); err != nil {
				t.Fatalf("Parse(%q) = %v", tt.args, err)
			}
			if *url != tt.wantURL || *c != tt.wantC || *d != tt.wantD {
				t.Errorf("Parse(%q) with %v: url %q c %d duration %v, want %q %d %v", tt.args, tt.env, *url, *c, *d, tt.wantURL, tt.wantC, tt.wantD)
			}
		})
	}
}

func TestParseErrorsAreUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"bad env value", nil, map[string]string{"SUDOKU_LOAD_C": "many"}, `invalid value "many" for $SUDOKU_LOAD_C`},
		{"empty env number", nil, map[string]string{"SUDOKU_LOAD_C": ""}, `invalid value "" for $SUDOKU_LOAD_C`},
		{"bad flag value", []string{"-c", "x"}, nil, `invalid value "x" for flag -c`},
		{"unknown flag", []string{"-nope"}, nil, "flag provided but not defined: -nope"},
		{"positional", []string{"extra"}, nil, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			fs, _, _, _ := newTestSet(&out)
			err := fs.Parse(tt.args, env(tt.env))
			var ue *UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(%q) = %v, want a *UsageError containing %q", tt.args, err, tt.want)
			}
			var stderr bytes.Buffer
			if code := exitCode("sudoku-load", err, &stderr); code != 2 {
				t.Errorf("exitCode(%v) = %d, want 2", err, code)
			}
		})
	}
}

func TestNonEmpty(t *testing.T) {
	var out bytes.Buffer
	fs, _, _, _ := newTestSet(&out)
	if err := fs.Parse(nil, env(map[string]string{"SUDOKU_LOAD_URL": ""})); err != nil {
		t.Fatalf("Parse = %v", err)
	}
	err := fs.NonEmpty("c", "url")
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `-url is empty ($SUDOKU_LOAD_URL)`) || !strings.Contains(err.Error(), `"http://127.0.0.1:8080"`) {
		t.Errorf("NonEmpty(c, url) after SUDOKU_LOAD_URL= is %v, want a *UsageError naming -url, its twin and its default", err)
	}
	fs, _, _, _ = newTestSet(&out)
	if err := fs.Parse(nil, env(nil)); err != nil {
		t.Fatalf("Parse = %v", err)
	}
	if err := fs.NonEmpty("c", "url"); err != nil {
		t.Errorf("NonEmpty with the defaults = %v, want nil", err)
	}
}

func TestHelpShowsDefaultsAndTwins(t *testing.T) {
	var out bytes.Buffer
	fs, _, _, _ := newTestSet(&out)
	err := fs.Parse([]string{"-h"}, env(nil))
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("Parse(-h) = %v, want flag.ErrHelp", err)
	}
	help := out.String()
	for _, want := range []string{
		"Usage: sudoku-load batch [flags]",
		"Sends puzzles in batches.",
		"-url URL\n    \tbase URL of the service (default \"http://127.0.0.1:8080\") ($SUDOKU_LOAD_URL)",
		"-c int\n    \trequests in flight (default 32) ($SUDOKU_LOAD_C)",
		"-duration duration\n    \thow long to run (0: until the input ends) ($SUDOKU_LOAD_DURATION)",
		"-version\n    \tprint the version and exit\n",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("-help lacks %q; got:\n%s", want, help)
		}
	}
	if strings.Contains(help, `(default "")`) || strings.Contains(help, "(default 0s)") {
		t.Errorf("-help shows a zero default:\n%s", help)
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	fs, _, _, _ := newTestSet(&out)
	fs.Engine = solver.Engine()
	if err := fs.Parse([]string{"-version"}, env(nil)); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("Parse(-version) = %v, want flag.ErrHelp", err)
	}
	if !strings.HasPrefix(out.String(), "sudoku-load batch, version ") {
		t.Errorf("-version printed %q", out.String())
	}
	// The last line names the engine, one of the two the solver has.
	if e := solver.Engine(); (e != "scalar" && e != "asm-avx2") || !strings.HasSuffix(out.String(), "\n  engine:           "+e+"\n") {
		t.Errorf("-version printed %q, want it to end with the engine %q", out.String(), e)
	}
	// A binary without the solver (sudoku-edge) names no engine.
	if v := Version("sudoku-edge", ""); strings.Contains(v, "engine:") {
		t.Errorf(`Version("sudoku-edge", "") = %q, want no engine line`, v)
	}
	if code := exitCode("sudoku-load", flag.ErrHelp, &out); code != 0 {
		t.Errorf("exitCode(ErrHelp) = %d, want 0", code)
	}
}

func TestParseFiles(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		wantFiles []string
		wantC     int
		wantErr   string
	}{
		{"no files", nil, nil, nil, 32, ""},
		{"files after flags", []string{"-c", "8", "a.txt", "b.txt"}, nil, []string{"a.txt", "b.txt"}, 8, ""},
		{"env fills what the flags do not", []string{"a.txt"}, map[string]string{"SUDOKU_LOAD_C": "4"}, []string{"a.txt"}, 4, ""},
		{"flag wins over env", []string{"-c", "8", "a.txt"}, map[string]string{"SUDOKU_LOAD_C": "4"}, []string{"a.txt"}, 8, ""},
		{"bad env value", []string{"a.txt"}, map[string]string{"SUDOKU_LOAD_C": "many"}, nil, 0, `invalid value "many" for $SUDOKU_LOAD_C`},
		{"unknown flag", []string{"-nope", "a.txt"}, nil, nil, 0, "flag provided but not defined: -nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			fs, _, c, _ := newTestSet(&out)
			files, err := fs.ParseFiles(tt.args, env(tt.env))
			if tt.wantErr != "" {
				var ue *UsageError
				if !errors.As(err, &ue) || ue.Error() == "" || !bytes.Contains([]byte(err.Error()), []byte(tt.wantErr)) {
					t.Fatalf("ParseFiles(%q) = %v, want a *UsageError containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFiles(%q) = %v", tt.args, err)
			}
			if !slices.Equal(files, tt.wantFiles) || *c != tt.wantC {
				t.Errorf("ParseFiles(%q) = %q with c %d, want %q with c %d", tt.args, files, *c, tt.wantFiles, tt.wantC)
			}
		})
	}
}

func TestParseFilesHelpAndVersion(t *testing.T) {
	for _, arg := range []string{"-h", "-version"} {
		var out bytes.Buffer
		fs, _, _, _ := newTestSet(&out)
		if _, err := fs.ParseFiles([]string{arg, "a.txt"}, env(nil)); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("ParseFiles(%s) = %v, want flag.ErrHelp", arg, err)
		}
		if out.Len() == 0 {
			t.Errorf("ParseFiles(%s) printed nothing", arg)
		}
	}
}

// hostValue is a string-valued flag.Value of another type than the flag
// package's own: its default is quoted too.
type hostValue struct{ s string }

func (h *hostValue) String() string     { return h.s }
func (h *hostValue) Set(s string) error { h.s = s; return nil }
func (h *hostValue) Get() any           { return h.s }

// countValue is a flag.Value that is not a flag.Getter: shown as is.
type countValue int

func (c *countValue) String() string     { return "3" }
func (c *countValue) Set(s string) error { return nil }

func TestHelpQuotesStringDefaults(t *testing.T) {
	var out bytes.Buffer
	fs := NewFlagSet("sudoku-edge", "", &out)
	fs.Var(&hostValue{"example.org"}, "host", "the `name` to serve")
	fs.Var(new(countValue), "count", "how many")
	fs.String("dir", "/run", "where")
	if err := fs.Parse([]string{"-h"}, env(nil)); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("Parse(-h) = %v", err)
	}
	help := out.String()
	for _, want := range []string{`(default "example.org")`, "(default 3)", `(default "/run")`} {
		if !strings.Contains(help, want) {
			t.Errorf("-help lacks %s; got:\n%s", want, help)
		}
	}
}

func TestSplitList(t *testing.T) {
	for in, want := range map[string][]string{
		"":      nil,
		",":     nil,
		" , ,":  nil,
		"a":     {"a"},
		" a b ": {"a b"},
		// The lists nginx's Parse tests took whole before the commands split them.
		" 8080, *:8082,127.0.0.1:28080, [::]:8443, [::1]:9 ,": {"8080", "*:8082", "127.0.0.1:28080", "[::]:8443", "[::1]:9"},
		" 127.0.0.1:1, 127.0.0.1:2 ,":                         {"127.0.0.1:1", "127.0.0.1:2"},
		"unix:/run/sudoku-fcgi/*.sock, sudoku:9000":           {"unix:/run/sudoku-fcgi/*.sock", "sudoku:9000"},
		"10.0.0.0/8, 172.18.0.1,fd00::/8":                     {"10.0.0.0/8", "172.18.0.1", "fd00::/8"},
		" 172.18.0.1, 10.1.2.3/8,,fd00::/8 ,2001:db8::7":      {"172.18.0.1", "10.1.2.3/8", "fd00::/8", "2001:db8::7"},
		"10.0.0.1 1; 0.0.0.0/0":                               {"10.0.0.1 1; 0.0.0.0/0"},
	} {
		if got := SplitList(in); !slices.Equal(got, want) {
			t.Errorf("SplitList(%q) = %q, want %q", in, got, want)
		}
	}
}
