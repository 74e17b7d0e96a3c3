package cmd_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestProductImportsNoCommand: the import arrows point down. No package
// outside cmd/ and tests/ (the product: solver, fcgi, nginx) imports a
// package below cmd/, in its code or its tests.
func TestProductImportsNoCommand(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "sudoku-fcgi/cmd") || strings.HasPrefix(f[0], "sudoku-fcgi/tests/") {
			continue
		}
		checked++
		for _, imp := range f[1:] {
			if imp == "sudoku-fcgi/cmd" || strings.HasPrefix(imp, "sudoku-fcgi/cmd/") {
				t.Errorf("%s imports %s: a product package must not depend on a command", f[0], imp)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("go list named %d product packages, want the solver, fcgi and nginx ones:\n%s", checked, out)
	}
}
