// Package load is the engine of the sudoku-load command: puzzle files, answer
// checks, an open-loop scheduler that times every request from its scheduled
// send time, HDR latency recording, batch, raw-TCP stress, a capacity search
// against a p99 objective, and text, JSON and HTML reports.
//
// Every answer is checked against its puzzle: a valid complete grid that keeps
// every given. A wrong answer is counted as an error of kind KindWrong.
//
// Latency in Load is measured from the moment a request was due, not from the
// moment a connection picked it up, so a stalled server shows up in the tail
// (no coordinated omission, as in wrk2).
package load
