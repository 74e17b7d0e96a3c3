package cmd_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// contractPkg is the one package below cmd/ that is no command: what the
// worker and the edge agree on, imported by both sides' packages.
const contractPkg = "sudoku-fcgi/cmd/contract"

// TestProductImportsNoCommand: the import arrows point down. No package
// outside cmd/ and tests/ (the product: solver, fcgi, nginx) imports a
// package below cmd/, in its code or its tests, but the contract.
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
			if imp == contractPkg {
				continue
			}
			if imp == "sudoku-fcgi/cmd" || strings.HasPrefix(imp, "sudoku-fcgi/cmd/") {
				t.Errorf("%s imports %s: a product package must not depend on a command", f[0], imp)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("go list named %d product packages, want the solver, fcgi and nginx ones:\n%s", checked, out)
	}
}

// TestContractImportsStandardLibraryOnly: the contract links nothing into
// either binary but itself, so that the edge no longer pulls in the
// worker's handler and solver to learn its defaults.
func TestContractImportsStandardLibraryOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{if not .Standard}}{{.ImportPath}}{{end}}`, "./contract").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	if got := strings.Fields(string(out)); len(got) != 1 || got[0] != contractPkg {
		t.Errorf("go list -deps ./contract names %v beyond the standard library, want only %s", got, contractPkg)
	}
}

// TestEdgeLinksNoWorker: sudoku-edge learns the worker's limits from the
// contract, so its binary links neither the worker's service nor the
// solver, and its image builds without their sources.
func TestEdgeLinksNoWorker(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./sudoku-edge").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "sudoku-fcgi/solver" || pkg == "sudoku-fcgi/fcgi" || strings.HasPrefix(pkg, "sudoku-fcgi/solver/") || strings.HasPrefix(pkg, "sudoku-fcgi/fcgi/") {
			t.Errorf("sudoku-edge links %s", pkg)
		}
	}
}

// TestEdgeRoomsImportOneWay: the edge's rooms under nginx/ import one
// way, the root package (the Supervisor's wiring) at the top: the leaves
// know nothing of the Supervisor, nor of each other but as listed.
func TestEdgeRoomsImportOneWay(t *testing.T) {
	allowed := map[string][]string{
		"sudoku-fcgi/nginx/discover": nil,
		"sudoku-fcgi/nginx/logs":     nil,
		"sudoku-fcgi/nginx/proc":     nil,
		"sudoku-fcgi/nginx/conf":     {"sudoku-fcgi/nginx/discover", "sudoku-fcgi/nginx/logs"},
		"sudoku-fcgi/nginx/edgetls":  {"sudoku-fcgi/nginx/conf", "sudoku-fcgi/nginx/proc"},
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../nginx/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		may, room := allowed[f[0]]
		if !room {
			continue
		}
		seen++
		for _, imp := range f[1:] {
			if (imp == "sudoku-fcgi/nginx" || strings.HasPrefix(imp, "sudoku-fcgi/nginx/")) && !slices.Contains(may, imp) {
				t.Errorf("%s imports %s: a room may import only %v of the edge", f[0], imp, may)
			}
		}
	}
	if seen != len(allowed) {
		t.Errorf("go list named %d of the %d rooms:\n%s", seen, len(allowed), out)
	}
}
