package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/nginx/admission"
)

// admissionFlags are the admission controller's flags (nginx/README.md,
// "Admission"); loop turns them into the Supervisor's Admission.
type admissionFlags struct {
	cfg       admission.Config
	scrape    string
	every     time.Duration
	logSocket string
}

func (a *admissionFlags) register(fs *cli.FlagSet) {
	a.cfg = admission.DefaultConfig()
	c := &a.cfg
	fs.BoolVar(&c.Off, "admission-off", false, "no admission queue in nginx: only the concurrency limit (admission.conf) admits, as before the controller")
	fs.Float64Var(&c.Fixed, "admission-rate", 0, "fixed admission `rate` in requests/s for all clients together; 0 computes it from the workers' metrics")
	fs.Float64Var(&c.Floor, "admission-min", c.Floor, "lowest admission `rate`, requests/s")
	fs.Float64Var(&c.Max, "admission-max", c.Max, "highest admission `rate`, requests/s, and the rate before the first figures")
	fs.Float64Var(&c.Step, "admission-step", c.Step, "relative `change` of the computed rate that reloads nginx with it")
	fs.Var(positiveDuration{&c.Interval}, "admission-interval", "least `duration` between two reloads for the admission rate")
	fs.StringVar(&a.scrape, "admission-scrape", "sudoku:9001", "comma-separated worker metrics `targets` (host:port, every address of the host is scraped)")
	a.every = time.Second
	fs.Var(positiveDuration{&a.every}, "admission-scrape-interval", "`duration` between two scrapes of the workers' metrics")
	fs.StringVar(&a.logSocket, "admission-log-socket", "access-log.sock", "unix datagram `socket` nginx sends a short access log line per request to (counted by status), relative to -run-dir; empty turns it off")
}

// loop validates the flags and returns the loop, nil when off.
func (a *admissionFlags) loop(runDir string, m *admission.Metrics, log zerolog.Logger) (*admission.Loop, error) {
	if err := a.cfg.Check(); err != nil {
		return nil, fmt.Errorf("-admission-*: %w", err)
	}
	if a.cfg.Off {
		return nil, nil
	}
	targets := splitList(a.scrape)
	if len(targets) == 0 && a.cfg.Fixed == 0 {
		return nil, fmt.Errorf("-admission-scrape: no targets; give some, a fixed -admission-rate or -admission-off")
	}
	l := &admission.Loop{Config: a.cfg, Every: a.every, Metrics: m, Log: log,
		Scraper: &admission.Scraper{Targets: targets}}
	if a.logSocket != "" {
		path := a.logSocket
		if !filepath.IsAbs(path) {
			path = filepath.Join(runDir, path)
		}
		l.Counter = &admission.LogCounter{Path: path, Metrics: m}
	}
	return l, nil
}
