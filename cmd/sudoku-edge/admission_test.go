package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/nginx/admission"
)

func TestAdmissionFlags(t *testing.T) {
	c := mustParse(t, nil, env{})
	off := admission.DefaultConfig()
	off.Off = true
	if c.adm.cfg != off || c.adm.scrape != "sudoku:9001" || c.adm.every != time.Second {
		t.Errorf("defaults: %+v, want admission.DefaultConfig() turned off, sudoku:9001, 1s", c.adm)
	}
	if l, err := c.adm.loop("/run/x", nil, zerolog.Nop()); l != nil || err != nil {
		t.Errorf("default: loop() = %v, %v; want nil, nil (today's behaviour)", l, err)
	}
	// nginx's answers are counted with the queue off too, sampled.
	if lc := c.adm.counter("/run/x", nil, zerolog.Nop()); lc == nil || lc.Path != "/run/x/access-log.sock" || lc.All {
		t.Errorf("default: counter() = %+v; want sampled lines on /run/x/access-log.sock", lc)
	}
	c = mustParse(t, []string{"-admission", "auto", "-access-log-all"}, env{"SUDOKU_EDGE_ACCESS_LOG_SOCKET": "/log.sock"})
	if l, err := c.adm.loop("/run/x", nil, zerolog.Nop()); err != nil || l == nil {
		t.Fatalf("loop() = %+v, %v; want a loop", l, err)
	}
	if lc := c.adm.counter("/run/x", nil, zerolog.Nop()); lc == nil || lc.Path != "/log.sock" || !lc.All {
		t.Errorf("counter() = %+v; want every answer on /log.sock", lc)
	}
	c = mustParse(t, []string{"-access-log-socket", ""}, env{})
	if lc := c.adm.counter("/run/x", nil, zerolog.Nop()); lc != nil {
		t.Errorf("empty -access-log-socket: counter() = %+v, want nil", lc)
	}

	c = mustParse(t, []string{"-admission-min", "10"}, env{
		"SUDOKU_EDGE_ADMISSION_MAX":      "900",
		"SUDOKU_EDGE_ADMISSION_INTERVAL": "3s",
		"SUDOKU_EDGE_ADMISSION_STEP":     "0.1",
		"SUDOKU_EDGE_ADMISSION":          "500",
	})
	if a := c.adm.cfg; a.Floor != 10 || a.Max != 900 || a.Interval != 3*time.Second || a.Step != 0.1 || a.Fixed != 500 {
		t.Errorf("flags and env twins: %+v", a)
	}

	c = mustParse(t, []string{"-admission", "off"}, env{"SUDOKU_EDGE_ADMISSION": "auto"})
	if l, err := c.adm.loop("/run/x", nil, zerolog.Nop()); l != nil || err != nil {
		t.Errorf("off: loop() = %v, %v; want nil, nil (today's behaviour)", l, err)
	}

	for _, args := range [][]string{
		{"-admission", "auto", "-admission-min", "0"},
		{"-admission", "auto", "-admission-min", "100", "-admission-max", "10"},
		{"-admission", "auto", "-admission-step", "1"},
		{"-admission-interval", "0s"},
		{"-admission", "fast"},
		{"-admission", "0"},
	} {
		_, err := parseConfig(args, env{}.get, io.Discard)
		var ue *cli.UsageError
		if err == nil || !errors.As(err, &ue) {
			t.Errorf("parseConfig(%q) = %v, want a usage error", args, err)
		} else if !strings.Contains(err.Error(), "admission") {
			t.Errorf("parseConfig(%q) = %v, want it to name the admission flag", args, err)
		}
	}
}
