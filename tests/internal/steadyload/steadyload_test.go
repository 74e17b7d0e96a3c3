package steadyload

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoadCountsFailures(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%4 == 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("X-Sudoku-Worker", "w1")
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	l := Start(srv.URL, 2, time.Millisecond, func(int) *http.Client { return srv.Client() })
	time.Sleep(100 * time.Millisecond)
	r := l.Stop()
	if r.OK == 0 || r.Failed == 0 || r.ByWorker["w1"] != r.OK || len(r.Errors) == 0 {
		t.Errorf("Load against a server failing every 4th request = %v, errors %q; want both counts and w1", r, r.Errors)
	}
	if got := float64(r.Failed) / float64(r.OK+r.Failed); got < 0.15 || got > 0.35 {
		t.Errorf("failure share %.2f, want about 0.25", got)
	}
}
