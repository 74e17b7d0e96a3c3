// Package cmd_test checks that the root README's flag tables say what each
// binary's -help says: every flag with its environment twin and default,
// and no flag the binary does not have.
package cmd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A helpFlag is one flag as -help prints it.
type helpFlag struct {
	env string
	// defaults maps each default -help shows ("" for none) to the modes
	// that have it ("" for a binary without modes).
	defaults map[string][]string
}

// A binary's -help runs: the arguments of each, and its mode ("" for none).
var commands = map[string][][]string{
	"sudoku-fcgi": {{"-help"}},
	"sudoku-edge": {{"-help"}},
	"sudoku":      {{"solve", "-help"}},
	"sudoku-load": {
		{"local", "-help"}, {"batch", "-help"}, {"load", "-help"},
		{"stress", "-help"}, {"capacity", "-help"},
	},
}

// hostDefaults are defaults that depend on the machine -help runs on (the
// hostname, the CPUs): the README describes them in words instead.
var hostDefaults = map[string]bool{
	"sudoku-fcgi -id":               true,
	"sudoku-edge -worker-processes": true,
	"sudoku -jobs":                  true,
	"sudoku-load -cores":            true,
	"sudoku-load -c for local":      true,
}

var (
	helpEntry  = regexp.MustCompile(`(?m)^  -(\S+)[^\n]*\n((?:    [^\n]*\n?)*)`)
	helpEnv    = regexp.MustCompile(`\(\$([A-Z0-9_]+)\)\s*$`)
	helpDef    = regexp.MustCompile(`\(default (.*?)\) \(\$[A-Z0-9_]+\)\s*$`)
	backticked = regexp.MustCompile("`([^`]*)`")
)

// parseHelp reads every flag of one -help output into flags.
func parseHelp(help, mode string, flags map[string]*helpFlag) {
	for _, m := range helpEntry.FindAllStringSubmatch(help, -1) {
		name, usage := m[1], strings.Join(strings.Fields(m[2]), " ")
		env := helpEnv.FindStringSubmatch(usage)
		if env == nil {
			continue // -version has no twin
		}
		def := ""
		if d := helpDef.FindStringSubmatch(usage); d != nil {
			def = strings.Trim(d[1], `"`)
		}
		f := flags[name]
		if f == nil {
			f = &helpFlag{env: env[1], defaults: map[string][]string{}}
			flags[name] = f
		}
		f.defaults[def] = append(f.defaults[def], mode)
	}
}

// A readmeRow is one row of a README flag table.
type readmeRow struct{ env, def string }

// readmeTable returns the rows of the first table after the line that
// starts with "**<binary>**", by flag name.
func readmeTable(t *testing.T, readme, binary string) map[string]readmeRow {
	t.Helper()
	rows := map[string]readmeRow{}
	lines := strings.Split(readme, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "**"+binary+"**") })
	if i < 0 {
		t.Fatalf("README has no **%s** section", binary)
	}
	for i++; i < len(lines) && !strings.HasPrefix(lines[i], "|"); i++ {
	}
	for ; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
		cells := strings.Split(strings.Trim(lines[i], "|"), " | ")
		if len(cells) < 4 {
			t.Errorf("README %s row %q: want | flag | env | default | meaning |", binary, lines[i])
			continue
		}
		flag := strings.Trim(strings.TrimSpace(cells[0]), "`")
		if !strings.HasPrefix(flag, "-") || strings.HasPrefix(flag, "--") {
			continue // the header and the separator
		}
		rows[strings.TrimPrefix(flag, "-")] = readmeRow{strings.Trim(strings.TrimSpace(cells[1]), "`"), strings.TrimSpace(cells[2])}
	}
	if len(rows) == 0 {
		t.Fatalf("README **%s** section has no flag table", binary)
	}
	return rows
}

// defaultShown reports whether a README default cell shows def: in
// backticks, or, for a flag without a default, as a zero value or a
// parenthesised word such as "(empty)".
func defaultShown(cell, def string) bool {
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		if m[1] == def {
			return true
		}
		if def == "" && (m[1] == "0" || m[1] == "false" || m[1] == "0s") {
			return true
		}
	}
	return def == "" && strings.HasPrefix(cell, "(")
}

func TestReadmeFlagTablesMatchHelp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every binary; skipped with -short")
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH to build the binaries: %v", err)
	}
	for binary := range commands {
		build := exec.Command(gocmd, "build", "-o", filepath.Join(bin, binary), "./"+binary)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build ./%s: %v\n%s", binary, err, out)
		}
	}
	for binary, runs := range commands {
		t.Run(binary, func(t *testing.T) {
			flags := map[string]*helpFlag{}
			for _, args := range runs {
				// -help exits 0 and prints to stdout; the env must not
				// change what it shows.
				cmd := exec.Command(filepath.Join(bin, binary), args...)
				cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("%s %s: %v", binary, strings.Join(args, " "), err)
				}
				mode := ""
				if len(args) > 1 && binary == "sudoku-load" {
					mode = args[0]
				}
				parseHelp(string(out), mode, flags)
			}
			rows := readmeTable(t, string(readme), binary)
			for name, f := range flags {
				row, ok := rows[name]
				if !ok {
					t.Errorf("README's %s table lacks -%s ($%s)", binary, name, f.env)
					continue
				}
				if row.env != f.env {
					t.Errorf("README: %s -%s has env %q, -help says $%s", binary, name, row.env, f.env)
				}
				for def, modes := range f.defaults {
					if hostDefaults[binary+" -"+name] {
						continue
					}
					if slices.ContainsFunc(modes, func(m string) bool { return hostDefaults[binary+" -"+name+" for "+m] }) {
						continue
					}
					if !defaultShown(row.def, def) {
						t.Errorf("README: %s -%s default %q does not show -help's %q (modes %q)", binary, name, row.def, def, modes)
					}
				}
			}
			for name := range rows {
				if flags[name] == nil {
					t.Errorf("README's %s table lists -%s, which -help does not have", binary, name)
				}
			}
		})
	}
}

// The checks themselves: a default cell shows a default, or a zero one.
func TestDefaultShown(t *testing.T) {
	for _, tc := range []struct {
		cell, def string
		want      bool
	}{
		{"`1024`", "1024", true},
		{"`127.0.0.1:9000` (image: `:9000`)", "127.0.0.1:9000", true},
		{"`8` batch, stress; `32` load", "32", true},
		{"`1024`", "512", false},
		{"`0` = GOMAXPROCS", "", true},
		{"(empty)", "", true},
		{"`10s`", "", false},
		{"1024", "1024", false},
	} {
		if got := defaultShown(tc.cell, tc.def); got != tc.want {
			t.Errorf("defaultShown(%q, %q) = %v, want %v", tc.cell, tc.def, got, tc.want)
		}
	}
}
