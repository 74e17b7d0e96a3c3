// Package monitoring checks the alerting rules in docker/prometheus against
// the operations docs: every alert says what it means and links to a
// section of the runbook that exists. promtool checks the rules' syntax and
// behaviour (make check-rules); it does not follow links.
package monitoring

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"sigs.k8s.io/yaml"
)

// repoRoot is where runbook_url paths start.
var repoRoot = filepath.Join("..", "..")

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// TestAlertsLinkTheRunbook: a runbook_url whose anchor matches no heading
// sends the operator to the top of the page (SudokuCertificateExpiringSoon
// pointed at a section that was never written).
func TestAlertsLinkTheRunbook(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docker", "prometheus", "rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules ruleFile
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatalf("parsing rules.yml: %v", err)
	}
	anchors := map[string]map[string]bool{} // by file
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			if strings.TrimSpace(r.Annotations["description"]) == "" {
				t.Errorf("alert %s: no description", r.Alert)
			}
			url := r.Annotations["runbook_url"]
			file, anchor, ok := strings.Cut(url, "#")
			if !ok || file == "" || anchor == "" {
				t.Errorf("alert %s: runbook_url %q is not FILE#ANCHOR", r.Alert, url)
				continue
			}
			if anchors[file] == nil {
				anchors[file] = headingAnchors(t, filepath.Join(repoRoot, filepath.FromSlash(file)))
			}
			if !anchors[file][anchor] {
				t.Errorf("alert %s: runbook_url %q: %s has no heading with anchor %q", r.Alert, url, file, anchor)
			}
		}
	}
	if alerts == 0 {
		t.Fatal("rules.yml has no alerts")
	}
}

// headingAnchors returns the anchors GitHub gives the Markdown headings of
// path (code blocks skipped).
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		text, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if fenced || !ok || !strings.HasPrefix(line, "#") || len(line)-len(strings.TrimLeft(line, "#")) > 6 {
			continue
		}
		a := githubAnchor(text)
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// githubAnchor is GitHub's anchor for a heading: lower case, punctuation
// dropped but for '-' and '_', each space a '-'.
func githubAnchor(heading string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			sb.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

func TestGithubAnchor(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SudokuWorkerDown", "sudokuworkerdown"},
		{"Alerts: what each means and what to do", "alerts-what-each-means-and-what-to-do"},
		{"`make test` and CI", "make-test-and-ci"},
		{"snake_case (v2)", "snake_case-v2"},
	} {
		if got := githubAnchor(tc.in); got != tc.want {
			t.Errorf("githubAnchor(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
