package fcgi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// statsMaxAge is how long one body of GET /sudoku/stats is served: the
// endpoint is public, and however many clients poll it a worker builds
// the body at most once per statsMaxAge.
const statsMaxAge = time.Second

// statsCache holds the last body of GET /sudoku/stats. Its lock is held
// while a body is built, so callers that find it stale wait for the one
// refresh instead of each building their own.
type statsCache struct {
	mu        sync.Mutex
	at        time.Time // when body was built; zero before the first
	body      []byte
	refreshes uint64             // bodies built, for tests
	samples   []rtmetrics.Sample // reused by readMemory under mu
}

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

// memoryMetrics are the runtime/metrics names readMemory reads, in the
// order it sums them. Unlike runtime.ReadMemStats they do not stop the
// world. As runtime/metrics documents the correspondence: HeapInuse is
// heap objects plus heap unused, HeapIdle is heap free plus released.
var memoryMetrics = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/total:bytes",
	"/gc/cycles/total:gc-cycles",
}

// readMemory reads the memory figures into samples, which it allocates
// on the first call (the caller keeps them for the next).
func readMemory(samples *[]rtmetrics.Sample) memoryJSON {
	if *samples == nil {
		*samples = make([]rtmetrics.Sample, len(memoryMetrics))
		for i, name := range memoryMetrics {
			(*samples)[i].Name = name
		}
	}
	ss := *samples
	rtmetrics.Read(ss)
	v := func(i int) uint64 {
		if ss[i].Value.Kind() != rtmetrics.KindUint64 {
			return 0 // a name this runtime does not know
		}
		return ss[i].Value.Uint64()
	}
	return memoryJSON{
		HeapInUseBytes:    v(0) + v(1),
		HeapIdleBytes:     v(2) + v(3),
		HeapReleasedBytes: v(3),
		SysBytes:          v(4),
		RSSBytes:          rss(),
		GCCycles:          uint32(v(5)),
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

// statsBody returns the current statistics; the caller holds s.sc.mu.
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
		Memory:         readMemory(&s.sc.samples),
	}
}

// statsSnapshot returns the body of GET /sudoku/stats for a request that
// started at now: the cached one while it is younger than statsMaxAge
// (or newer than now, built while the request waited), else a new one.
// The body is shared: callers only read it.
func (s *Service) statsSnapshot(now time.Time) ([]byte, error) {
	s.sc.mu.Lock()
	defer s.sc.mu.Unlock()
	if s.sc.body != nil && now.Sub(s.sc.at) < statsMaxAge {
		return s.sc.body, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as appendJSONString: the worker id as given
	if err := enc.Encode(s.statsBody(now)); err != nil {
		return nil, err
	}
	s.sc.at, s.sc.body = now, buf.Bytes()
	s.sc.refreshes++
	return s.sc.body, nil
}

func (s *Service) serveStats(w http.ResponseWriter, st *reqState, now time.Time) {
	b, err := s.statsSnapshot(now)
	if err != nil {
		s.fail(w, st, err, "")
		return
	}
	st.outcome = outcomeStats
	s.write(w, st, http.StatusOK, typeJSON, b)
}

func (s *Service) openConns() int64 {
	if s.cfg.OpenConns == nil {
		return 0
	}
	return s.cfg.OpenConns()
}
