package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"sudoku-fcgi/cmd/contract"
)

// nginxConf holds the nginx settings some criteria are stated in.
type nginxConf struct {
	readTimeout    time.Duration // the shortest fastcgi_read_timeout (nginx default 60s)
	connectTimeout time.Duration // fastcgi_connect_timeout (default 60s)
	failTimeout    time.Duration // server fail_timeout (default 10s)
	maxFails       int           // server max_fails (default 1)
	source         string
}

func defaultNginxConf() nginxConf {
	return nginxConf{readTimeout: 60 * time.Second, connectTimeout: 60 * time.Second,
		failTimeout: 10 * time.Second, maxFails: 1, source: "nginx defaults"}
}

// readNginxConf reads every *.conf of the nginx directory (nginx.conf and
// the files it includes); the live config replaces it once the stack runs.
func readNginxConf(dir string) (nginxConf, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.conf"))
	if err != nil || len(files) == 0 {
		return defaultNginxConf(), fmt.Errorf("no nginx config in %s", dir)
	}
	var all strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return defaultNginxConf(), err
		}
		all.Write(b)
		all.WriteString("\n")
	}
	c := parseNginxConf(all.String())
	// The templates render fastcgi_read_timeout from the edge's setting,
	// whose default is the contract's, above the worker's answer time.
	c.readTimeout = contract.ReadTimeout
	c.source = dir + "/*.conf"
	return c, nil
}

// liveNginxConf reads the running configuration (nginx -T, which includes
// the edge's servers.conf) from the nginx container.
func (s *suite) liveNginxConf(ctx context.Context) {
	ids, err := s.st.containers(ctx, "nginx", false)
	if err != nil || len(ids) == 0 {
		return
	}
	out, err := s.st.docker(ctx, "exec", ids[0], "nginx", "-T")
	if err != nil || !strings.Contains(out, "upstream") {
		return
	}
	s.nginx = parseNginxConf(out)
	s.nginx.source = "nginx -T in " + short(ids[0])
}

var (
	reDirective = regexp.MustCompile(`(?m)^\s*(fastcgi_read_timeout|fastcgi_connect_timeout)\s+([0-9a-z]+)\s*;`)
	reServer    = regexp.MustCompile(`(?m)^\s*server\s+[^;]*;`)
	reFailTO    = regexp.MustCompile(`fail_timeout=([0-9a-z]+)`)
	reMaxFails  = regexp.MustCompile(`max_fails=([0-9]+)`)
)

func parseNginxConf(text string) nginxConf {
	c := defaultNginxConf()
	// Strip comments.
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if i := strings.Index(l, "#"); i >= 0 {
			l = l[:i]
		}
		lines = append(lines, l)
	}
	text = strings.Join(lines, "\n")
	// The GET location has the shortest read timeout (the batch location
	// waits longer); that is the one the scenarios' GETs meet.
	readSeen := false
	for _, m := range reDirective.FindAllStringSubmatch(text, -1) {
		d, ok := nginxDuration(m[2])
		if !ok {
			continue
		}
		if m[1] == "fastcgi_read_timeout" {
			if !readSeen || d < c.readTimeout {
				c.readTimeout = d
			}
			readSeen = true
		} else {
			c.connectTimeout = d
		}
	}
	for _, srv := range reServer.FindAllString(text, -1) {
		if m := reFailTO.FindStringSubmatch(srv); m != nil {
			if d, ok := nginxDuration(m[1]); ok {
				c.failTimeout = d
			}
		}
		if m := reMaxFails.FindStringSubmatch(srv); m != nil {
			c.maxFails, _ = strconv.Atoi(m[1])
		}
	}
	return c
}

// nginxDuration parses nginx time values: "30s", "500ms", "1m", "10".
func nginxDuration(v string) (time.Duration, bool) {
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(n) * time.Second, true
	}
	if strings.HasSuffix(v, "m") && !strings.HasSuffix(v, "ms") {
		n, err := strconv.Atoi(strings.TrimSuffix(v, "m"))
		return time.Duration(n) * time.Minute, err == nil
	}
	d, err := time.ParseDuration(v)
	return d, err == nil
}
