package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
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
	logAll    bool
}

func (a *admissionFlags) register(fs *cli.FlagSet) {
	a.cfg = admission.DefaultConfig()
	c := &a.cfg
	c.Off = true
	fs.Var(admissionMode{c}, "admission", "admission queue in nginx for all clients together: off (only the concurrency limit admits), auto (the rate follows the workers' metrics) or a fixed `rate` in requests/s")
	fs.Float64Var(&c.Floor, "admission-min", c.Floor, "lowest admission `rate`, requests/s")
	fs.Float64Var(&c.Max, "admission-max", c.Max, "highest admission `rate`, requests/s, and the rate before the first figures")
	fs.Float64Var(&c.Step, "admission-step", c.Step, "relative `change` of the computed rate that reloads nginx with it")
	fs.Var(positiveDuration{&c.Interval}, "admission-interval", "least `duration` between two reloads for the admission rate")
	fs.StringVar(&a.scrape, "admission-scrape", "sudoku:9001", "comma-separated worker metrics `targets` (host:port, every address of the host is scraped)")
	a.every = time.Second
	fs.Var(positiveDuration{&a.every}, "admission-scrape-interval", "`duration` between two scrapes of the workers' metrics")
	fs.StringVar(&a.logSocket, "access-log-socket", "access-log.sock", "unix datagram `socket` nginx sends short access log lines to (one request in 16, and each answer of status 400 and up but 429 and 503), which sudoku-edge counts by status and the admission controller reads (sudoku_edge_nginx_responses_total), relative to -run-dir; empty turns it off")
	fs.BoolVar(&a.logAll, "access-log-all", false, "send a line for every answer to -access-log-socket: exact counts, at sudoku-edge CPU for each answer")
}

// admissionMode is the -admission value: off, auto or a rate.
type admissionMode struct{ c *admission.Config }

func (m admissionMode) String() string {
	switch {
	case m.c == nil || m.c.Off:
		return "off"
	case m.c.Fixed > 0:
		return strconv.FormatFloat(m.c.Fixed, 'f', -1, 64)
	}
	return "auto"
}

func (m admissionMode) Set(v string) error {
	switch v {
	case "off":
		m.c.Off, m.c.Fixed = true, 0
	case "auto":
		m.c.Off, m.c.Fixed = false, 0
	default:
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || !(r >= 1) || math.IsInf(r, 0) {
			return fmt.Errorf("%q: want off, auto or a rate >= 1 (requests/s)", v)
		}
		m.c.Off, m.c.Fixed = false, r
	}
	return nil
}

// counter returns the counter of nginx's answers on -access-log-socket,
// nil when it is off.
func (a *admissionFlags) counter(runDir string, m *admission.Metrics, log zerolog.Logger) *admission.LogCounter {
	if a.logSocket == "" {
		return nil
	}
	path := a.logSocket
	if !filepath.IsAbs(path) {
		path = filepath.Join(runDir, path)
	}
	return &admission.LogCounter{Path: path, All: a.logAll, Metrics: m, Log: log}
}

// loop returns the loop, nil when off; config.check has validated the
// settings.
func (a *admissionFlags) loop(runDir string, m *admission.Metrics, log zerolog.Logger) (*admission.Loop, error) {
	if a.cfg.Off {
		return nil, nil
	}
	targets := splitList(a.scrape)
	if len(targets) == 0 && a.cfg.Fixed == 0 {
		return nil, fmt.Errorf("-admission-scrape: no targets; give some, a fixed -admission rate or -admission off")
	}
	return &admission.Loop{Config: a.cfg, Every: a.every, Metrics: m, Log: log,
		Scraper: &admission.Scraper{Targets: targets}, StatusFile: filepath.Join(runDir, "admission.json")}, nil
}
