// Package compose checks docker-compose.yml's and docker/stack.yml's
// defaults that no running stack shows: the end-to-end suites publish
// their own loopback ports, and logs rotate only once they are large.
package compose

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

type service struct {
	Ports    []string `json:"ports"`
	Expose   []string `json:"expose"`
	Profiles []string `json:"profiles"`
}

func load(t *testing.T) map[string]service { return loadFile[service](t, "docker-compose.yml") }

// logging is a service's log configuration, in either file.
type logging struct {
	Logging *struct {
		Driver  string            `json:"driver"`
		Options map[string]string `json:"options"`
	} `json:"logging"`
}

// loadFile reads the services of a compose or stack file, named from the
// repository's root, as S; YAML aliases (x- anchors) are resolved.
func loadFile[S any](t *testing.T, name string) map[string]S {
	t.Helper()
	b, err := os.ReadFile("../../" + name)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]S `json:"services"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(f.Services) == 0 {
		t.Fatalf("%s: no services", name)
	}
	return f.Services
}

// reDefault matches a port mapping "${VAR:-default}:container"; default is
// the host side compose publishes when VAR is unset.
var reDefault = regexp.MustCompile(`^\$\{[A-Z_]+:-([^}]*)\}:([0-9]+)$`)

// Only nginx's HTTP port is published on every address by default; the
// exporter, Prometheus and Alertmanager listen on loopback unless told
// otherwise, and
// the workers publish nothing (nginx reaches them on the compose network).
func TestPublishedDefaults(t *testing.T) {
	want := map[string]string{
		"nginx":        "8080",
		"exporter":     "127.0.0.1:9113",
		"prometheus":   "127.0.0.1:9090",
		"alertmanager": "127.0.0.1:9093",
	}
	services := load(t)
	for name, svc := range services {
		w, ok := want[name]
		if !ok {
			if len(svc.Ports) > 0 {
				t.Errorf("%s publishes %v; only nginx, the exporter, Prometheus and Alertmanager may", name, svc.Ports)
			}
			continue
		}
		if len(svc.Ports) != 1 {
			t.Errorf("%s publishes %v, want one port", name, svc.Ports)
			continue
		}
		m := reDefault.FindStringSubmatch(svc.Ports[0])
		if m == nil {
			t.Errorf("%s: port %q is not ${VAR:-default}:port", name, svc.Ports[0])
			continue
		}
		if m[1] != w {
			t.Errorf("%s publishes %q by default, want %q", name, m[1], w)
		}
		if name != "nginx" && !strings.HasPrefix(m[1], "127.0.0.1:") {
			t.Errorf("%s is published beyond loopback by default: %q", name, m[1])
		}
	}
	for name := range want {
		if _, ok := services[name]; !ok {
			t.Errorf("no service %s in docker-compose.yml", name)
		}
	}
}

// reLogOption matches a log option "${SUDOKU_LOG_MAX_<X>:-default}".
var reLogOption = regexp.MustCompile(`^\$\{(SUDOKU_LOG_MAX_(?:SIZE|FILE)):-([0-9]+[kmg]?)\}$`)

// Every service of the compose and the Swarm stack logs through json-file
// with rotation, its size and count the settings SUDOKU_LOG_MAX_SIZE and
// SUDOKU_LOG_MAX_FILE with one default each, which the README's table
// shows.
func TestEveryServiceRotatesItsLog(t *testing.T) {
	defaults := map[string]string{} // variable -> default, over both files
	for _, file := range []string{"docker-compose.yml", "docker/stack.yml"} {
		for name, svc := range loadFile[logging](t, file) {
			if svc.Logging == nil || svc.Logging.Driver != "json-file" {
				t.Errorf("%s: service %s logs without rotation (logging %+v), want driver json-file with max-size and max-file", file, name, svc.Logging)
				continue
			}
			for opt, want := range map[string]string{"max-size": "SUDOKU_LOG_MAX_SIZE", "max-file": "SUDOKU_LOG_MAX_FILE"} {
				m := reLogOption.FindStringSubmatch(svc.Logging.Options[opt])
				if m == nil || m[1] != want {
					t.Errorf("%s: service %s log option %s = %q, want ${%s:-<default>}", file, name, opt, svc.Logging.Options[opt], want)
					continue
				}
				if d, ok := defaults[want]; ok && d != m[2] {
					t.Errorf("%s: service %s defaults %s to %q, elsewhere %q: one default", file, name, want, m[2], d)
				}
				defaults[want] = m[2]
			}
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for v, d := range defaults {
		row := regexp.MustCompile("(?m)^\\|[^\n]*`" + v + "`[^\n]*\\| `" + d + "`")
		if !row.Match(readme) {
			t.Errorf("README's configuration table has no row for %s with its default `%s`", v, d)
		}
	}
}
