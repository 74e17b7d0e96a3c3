// Package compose checks docker-compose.yml's defaults that no running
// stack shows: the end-to-end suites publish their own loopback ports.
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

func load(t *testing.T) map[string]service {
	t.Helper()
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]service `json:"services"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f.Services
}

// reDefault matches a port mapping "${VAR:-default}:container"; default is
// the host side compose publishes when VAR is unset.
var reDefault = regexp.MustCompile(`^\$\{[A-Z_]+:-([^}]*)\}:([0-9]+)$`)

// Only nginx's HTTP port is published on every address by default; the
// exporter and Prometheus listen on loopback unless told otherwise, and
// the workers publish nothing (nginx reaches them on the compose network).
func TestPublishedDefaults(t *testing.T) {
	want := map[string]string{
		"nginx":      "8080",
		"exporter":   "127.0.0.1:9113",
		"prometheus": "127.0.0.1:9090",
	}
	services := load(t)
	for name, svc := range services {
		w, ok := want[name]
		if !ok {
			if len(svc.Ports) > 0 {
				t.Errorf("%s publishes %v; only nginx, the exporter and Prometheus may", name, svc.Ports)
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
