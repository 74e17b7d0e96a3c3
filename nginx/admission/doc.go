// Package admission computes the rate of nginx's admission queue (a
// limit_req zone on a key shared by every client) from what the workers
// report on their /metrics and what nginx itself counts, and renders it
// into the two includes nginx reads.
//
// The core, the controller, is pure and deterministic: a sample in, a
// decision out, no clock or I/O of its own, so that recorded or simulated
// traces replay exactly. Scraper turns the workers' Prometheus text into
// samples, LogCounter counts nginx's own answers, render writes the
// includes, and Loop ties them to the supervisor's check-and-reload path
// (nginx -t, then reload) at most once per Config.Interval. Extension is
// what the edge runs: it writes the includes before nginx starts, then
// runs the Loop.
package admission
