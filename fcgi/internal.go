package fcgi

import (
	"encoding/json"
	"net/http"
	"net/http/pprof"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// InternalHandler serves the internal listener (never routed by nginx):
// /metrics from g, /healthz, /readyz (503 while draining), /debug/pprof/
// and POST /debug/free-os-memory.
func (s *Service) InternalHandler(g prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if s.draining.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("draining\n"))
			return
		}
		w.Write([]byte("ready\n"))
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("POST /debug/free-os-memory", func(w http.ResponseWriter, r *http.Request) {
		before := readMemory()
		debug.FreeOSMemory()
		after := readMemory()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]memoryJSON{"before": before, "after": after})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["X-Sudoku-Worker"] = s.hdrWorker
		mux.ServeHTTP(w, r)
	})
}
