// Package loadtest holds what the end-to-end tests add to the load engine
// (sudoku-fcgi/cmd/sudoku-load/load) and the shipped sudoku-load does not
// use.
package loadtest

import (
	"net/http"
	"sync/atomic"
)

// Alternate returns a RoundTripper that sends each request through the next
// of rts in turn: e.g. half the requests over kept-alive connections and
// half over a new connection each.
func Alternate(rts ...http.RoundTripper) http.RoundTripper { return &alternate{rts: rts} }

type alternate struct {
	rts []http.RoundTripper
	n   atomic.Uint64
}

func (a *alternate) RoundTrip(r *http.Request) (*http.Response, error) {
	return a.rts[(a.n.Add(1)-1)%uint64(len(a.rts))].RoundTrip(r)
}

// CloseIdleConnections closes those of every RoundTripper that has them.
func (a *alternate) CloseIdleConnections() {
	for _, rt := range a.rts {
		if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
}
