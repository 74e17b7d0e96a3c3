package main

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"sudoku-fcgi/solver"
)

// sudoku_build_info says which solver engine the worker runs.
func TestBuildInfoNamesTheEngine(t *testing.T) {
	reg, err := newRegistry(prometheus.NewCounter(prometheus.CounterOpts{Name: "svc"}), prometheus.NewCounter(prometheus.CounterOpts{Name: "conns"}))
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sudoku_build_info" {
			continue
		}
		for _, l := range mf.GetMetric()[0].GetLabel() {
			if l.GetName() == "engine" {
				if l.GetValue() != solver.Engine() {
					t.Errorf("sudoku_build_info{engine=%q}, want %q", l.GetValue(), solver.Engine())
				}
				return
			}
		}
		t.Fatalf("sudoku_build_info has no engine label: %v", mf.GetMetric()[0].GetLabel())
	}
	t.Fatal("no sudoku_build_info")
}
