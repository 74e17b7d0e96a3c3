package fcgi

import (
	"encoding/json"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// statsJSON is the body of GET /sudoku/stats.
type statsJSON struct {
	Worker             string             `json:"worker"`
	UptimeSeconds      float64            `json:"uptime_seconds"`
	Draining           bool               `json:"draining"`
	RequestsPerSecond  map[string]float64 `json:"requests_per_second"`
	Totals             map[string]uint64  `json:"totals"`
	BatchLines         map[string]uint64  `json:"batch_lines"`
	InFlight           int64              `json:"in_flight"`
	PoolSize           int                `json:"pool_size"`
	PoolBusy           int                `json:"pool_busy"`
	QueueDepth         int                `json:"queue_depth"`
	QueueCapacity      int                `json:"queue_capacity"`
	FastCGIConnections int64              `json:"fastcgi_connections"`
	LatencySeconds     map[string]float64 `json:"latency_seconds"`
	LatencyWindow      string             `json:"latency_window"`
	LatencySamples     int                `json:"latency_samples"`
	Goroutines         int                `json:"goroutines"`
	GOMAXPROCS         int                `json:"gomaxprocs"`
	Memory             memoryJSON         `json:"memory"`
}

// memoryJSON reports the Go heap and the process's resident set.
type memoryJSON struct {
	HeapInUseBytes    uint64 `json:"heap_inuse_bytes"`
	HeapIdleBytes     uint64 `json:"heap_idle_bytes"`
	HeapReleasedBytes uint64 `json:"heap_released_bytes"`
	SysBytes          uint64 `json:"sys_bytes"`
	RSSBytes          uint64 `json:"rss_bytes"`
	GCCycles          uint32 `json:"gc_cycles"`
}

func readMemory() memoryJSON {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memoryJSON{
		HeapInUseBytes:    ms.HeapInuse,
		HeapIdleBytes:     ms.HeapIdle,
		HeapReleasedBytes: ms.HeapReleased,
		SysBytes:          ms.Sys,
		RSSBytes:          rss(),
		GCCycles:          ms.NumGC,
	}
}

// rss reads the resident set size from /proc (0 where there is none).
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}

// statsBody returns the current statistics.
func (s *Service) statsBody(now time.Time) statsJSON {
	snap := s.stats.snapshot(now)
	return statsJSON{
		Worker:        s.cfg.WorkerID,
		UptimeSeconds: snap.Uptime.Seconds(),
		Draining:      s.draining.Load(),
		RequestsPerSecond: map[string]float64{
			"1s": snap.RPS1, "10s": snap.RPS10, "60s": snap.RPS60,
		},
		Totals:             s.counts.totals(),
		BatchLines:         s.counts.batchLines(),
		InFlight:           s.counts.inFlight.Load(),
		PoolSize:           s.pool.Size(),
		PoolBusy:           s.pool.Busy(),
		QueueDepth:         s.pool.Waiting(),
		QueueCapacity:      s.pool.QueueCap(),
		FastCGIConnections: s.openConns(),
		LatencySeconds: map[string]float64{
			"p50": snap.P50.Seconds(), "p90": snap.P90.Seconds(),
			"p99": snap.P99.Seconds(), "p99.9": snap.P999.Seconds(),
		},
		LatencyWindow:  "60s",
		LatencySamples: snap.LatencySamples,
		Goroutines:     runtime.NumGoroutine(),
		GOMAXPROCS:     runtime.GOMAXPROCS(0),
		Memory:         readMemory(),
	}
}

func (s *Service) serveStats(w http.ResponseWriter, st *reqState, now time.Time) {
	b, err := json.Marshal(s.statsBody(now))
	if err != nil {
		s.fail(w, st, err, "")
		return
	}
	st.outcome = outcomeStats
	s.write(w, st, http.StatusOK, typeJSON, append(b, '\n'))
}

func (s *Service) openConns() int64 {
	if s.cfg.OpenConns == nil {
		return 0
	}
	return s.cfg.OpenConns()
}
