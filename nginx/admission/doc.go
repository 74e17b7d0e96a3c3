// Package admission computes the rate of nginx's admission queue (a
// limit_req zone on a key shared by every client) from what the workers
// report on their /metrics and what nginx itself counts, and renders it
// into the two includes nginx reads.
//
// The core, Controller, is pure and deterministic: a Sample in, a Decision
// out, no clock or I/O of its own, so that recorded or simulated traces
// replay exactly. Scraper turns the workers' Prometheus text into Samples,
// Render writes the includes and Loop ties them to a caller's apply
// function (nginx -t, then reload) at most once per Config.Interval.
package admission
