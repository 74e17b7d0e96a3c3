package conf

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"

	"sudoku-fcgi/cmd/contract"
	"sudoku-fcgi/nginx/logs"
)

// siteFiles are the files RenderSite renders: nginx.conf and the files
// it includes from beside it, templates for the values a Site names.
var siteFiles = []string{"nginx.conf", "sudoku-locations.conf", "sudoku-fastcgi.conf", "sudoku-www.conf", "sudoku-guard.conf"}

// sampleRegex is the nginx regex that matches one $request_id (32 random
// hex digits) in logs.SampleEvery: "~0$" for 16, "~00$" for 256.
func sampleRegex() string {
	zeros := ""
	for n := logs.SampleEvery; n > 1; n /= 16 {
		zeros += "0"
	}
	return "~" + zeros + "$"
}

// Site is where the project's nginx configuration runs: the paths and the
// addresses nginx.conf and the files beside it name.
type Site struct {
	RunDir          string // the files sudoku-edge writes (servers.conf, ...) and nginx's pid file
	WWWRoot         string // the web page's files
	StatusListen    string // nginx listen of stub_status, e.g. "8082"
	ChallengeListen string // host:port of sudoku-edge's ACME challenge responder
	TempDir         string // nginx's temporary files; empty keeps nginx's built-in paths

	// ReadTimeout is fastcgi_read_timeout of GET /sudoku and /sudoku/stats:
	// a worker silent for longer hangs, and nginx retries the GET on
	// another. 0 means contract.ReadTimeout, above the worker's queue
	// wait and solve budget.
	ReadTimeout time.Duration
	// BatchReadTimeout is fastcgi_read_timeout of the batch POST. 0 means
	// contract.BatchReadTimeout, above the worker's batch deadline.
	BatchReadTimeout time.Duration
}

// nginxDuration writes d as an nginx time: whole seconds as "35s", anything
// else in milliseconds ("1500ms").
func nginxDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// RenderSite renders the siteFiles of files (the project's nginx/
// directory, whose package embeds them) for site into dir: rendered with
// the image's values they are the image's /etc/nginx files.
func RenderSite(dir string, site Site, files fs.FS) error {
	values := map[string]string{
		"run directory": site.RunDir, "www root": site.WWWRoot,
		"status listen": site.StatusListen, "challenge address": site.ChallengeListen, "temp directory": site.TempDir,
	}
	for name, v := range values {
		if strings.ContainsAny(v, ";{}#\"'\\\n\r$ \t") || (v == "" && name != "temp directory") {
			return fmt.Errorf("%w: %s %q", ErrUnsafe, name, v)
		}
	}
	if site.ReadTimeout == 0 {
		site.ReadTimeout = contract.ReadTimeout
	}
	if site.BatchReadTimeout == 0 {
		site.BatchReadTimeout = contract.BatchReadTimeout
	}
	for _, d := range []time.Duration{site.ReadTimeout, site.BatchReadTimeout} {
		if d < time.Millisecond || d%time.Millisecond != 0 {
			return fmt.Errorf("%w: read timeout %v: want whole milliseconds, at least 1ms", ErrUnsafe, d)
		}
	}
	if _, err := parseListen(site.StatusListen); err != nil {
		return err
	}
	tmpl, err := template.New("").Option("missingkey=error").Funcs(template.FuncMap{
		"duration": nginxDuration, "sampleEvery": func() int { return logs.SampleEvery }, "sampleRegex": sampleRegex,
	}).ParseFS(files, siteFiles...)
	if err != nil {
		return fmt.Errorf("parsing the site's templates: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range siteFiles {
		var buf bytes.Buffer
		if err := tmpl.ExecuteTemplate(&buf, name, site); err != nil {
			return fmt.Errorf("rendering %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}
