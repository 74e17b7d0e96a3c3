package nginx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sudoku-fcgi/nginx/conf"
)

// hostSite is a host stack's Site: every value differs from the image's.
func hostSite(dir string) conf.Site {
	return conf.Site{
		RunDir: filepath.Join(dir, "run"), WWWRoot: "/src/nginx/www",
		StatusListen: "127.0.0.1:28082", ChallengeListen: "127.0.0.1:28081", TempDir: filepath.Join(dir, "tmp"),
	}
}

// TestRenderSite: every value of the Site lands where nginx reads it, in
// each of the four files, and no template action is left.
func TestRenderSite(t *testing.T) {
	dir := t.TempDir()
	site := hostSite(dir)
	if err := RenderSite(dir, site); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"nginx.conf": {
			"\npid " + site.RunDir + "/nginx.pid;\n",
			"\n        include " + site.RunDir + "/listen.conf;\n",
			"\n        listen 127.0.0.1:28082;\n",
			"\n            proxy_pass http://127.0.0.1:28081;\n",
			"\n        include " + site.RunDir + "/servers.conf;\n",
			"\n    include " + site.RunDir + "/tls.conf;\n",
			"\n    include " + site.RunDir + "/access-log.conf;\n",
			"\nhttp {\n    client_body_temp_path " + site.TempDir + "/body;\n",
			"\n    uwsgi_temp_path " + site.TempDir + "/uwsgi;\n    server_tokens off;\n",
		},
		"sudoku-locations.conf": {"\n    include " + site.RunDir + "/admission.conf;\n"},
		"sudoku-www.conf":       {"\n    root /src/nginx/www;\n"},
		"sudoku-fastcgi.conf":   {"fastcgi_pass sudoku_workers;"},
	}
	for name, wants := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wants {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s has no %q", name, w)
			}
		}
		for _, gone := range []string{"{{", "}}", "/run/sudoku-edge/servers.conf;", "/usr/share/sudoku-www;", "listen 8080", "listen 8082", ":8081;"} {
			if strings.Contains(string(b), gone) {
				t.Errorf("%s still has %q", name, gone)
			}
		}
	}
}

// Without a TempDir nginx.conf names no temp path: nginx keeps its own.
func TestRenderSiteNoTempDir(t *testing.T) {
	dir := t.TempDir()
	site := hostSite(dir)
	site.TempDir = ""
	if err := RenderSite(dir, site); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "nginx.conf"))
	if strings.Contains(string(b), "_temp_path") || !strings.Contains(string(b), "\nhttp {\n    server_tokens off;\n") {
		t.Errorf("nginx.conf without a temp dir:\n%s", b)
	}
}

// A value that would end a directive, or an empty one, is refused before a
// file is written; so is a listen address nginx would not take.
func TestRenderSiteRefuses(t *testing.T) {
	for name, set := range map[string]func(*conf.Site){
		"run dir with ;":      func(s *conf.Site) { s.RunDir = "/run; include /etc/passwd" },
		"www root with {":     func(s *conf.Site) { s.WWWRoot = "/www {" },
		"challenge with $":    func(s *conf.Site) { s.ChallengeListen = "$host:1" },
		"temp dir with space": func(s *conf.Site) { s.TempDir = "/tmp x" },
		"empty status listen": func(s *conf.Site) { s.StatusListen = "" },
		"empty www root":      func(s *conf.Site) { s.WWWRoot = "" },
	} {
		dir := t.TempDir()
		site := hostSite(dir)
		set(&site)
		if err := RenderSite(dir, site); !errors.Is(err, conf.ErrUnsafe) {
			t.Errorf("%s: RenderSite = %v, want ErrUnsafe", name, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "nginx.conf")); err == nil {
			t.Errorf("%s: nginx.conf written", name)
		}
	}
	dir := t.TempDir()
	site := hostSite(dir)
	site.StatusListen = "localhost:8082"
	if err := RenderSite(dir, site); err == nil || !strings.Contains(err.Error(), "localhost:8082") {
		t.Errorf("status listen localhost:8082: RenderSite = %v, want the listen address refused", err)
	}
}
