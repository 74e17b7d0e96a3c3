// Package edgemetric builds sudoku-edge's metrics, in the sudoku_edge
// namespace, for the packages that keep them (nginx and nginx/admission).
package edgemetric

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Set makes metrics and keeps each one it made for Register. The zero
// Set is ready to use.
type Set struct {
	all []prometheus.Collector
}

func opts(name, help string) prometheus.Opts {
	return prometheus.Opts{Namespace: "sudoku", Subsystem: "edge", Name: name, Help: help}
}

func keep[C prometheus.Collector](s *Set, c C) C {
	s.all = append(s.all, c)
	return c
}

// Gauge is sudoku_edge_<name>.
func (s *Set) Gauge(name, help string) prometheus.Gauge {
	return keep(s, prometheus.NewGauge(prometheus.GaugeOpts(opts(name, help))))
}

// Counter is sudoku_edge_<name>.
func (s *Set) Counter(name, help string) prometheus.Counter {
	return keep(s, prometheus.NewCounter(prometheus.CounterOpts(opts(name, help))))
}

// GaugeVec is sudoku_edge_<name> by labels.
func (s *Set) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return keep(s, prometheus.NewGaugeVec(prometheus.GaugeOpts(opts(name, help)), labels))
}

// CounterVec is sudoku_edge_<name> by labels.
func (s *Set) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return keep(s, prometheus.NewCounterVec(prometheus.CounterOpts(opts(name, help)), labels))
}

// Register registers every metric the set made with r.
func (s *Set) Register(r prometheus.Registerer) error {
	var errs []error
	for _, c := range s.all {
		errs = append(errs, r.Register(c))
	}
	return errors.Join(errs...)
}
