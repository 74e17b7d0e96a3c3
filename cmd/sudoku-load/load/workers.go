package load

import (
	"fmt"
	"maps"
	"sync"
	"time"
)

// Workers is an OnSample hook that counts, per worker (the X-Sudoku-Worker
// header), the verified answers and when it first and last gave one: what
// the scaling and TLS tests judge. It is safe for concurrent use.
type Workers struct {
	mu sync.Mutex
	t  WorkerTally
}

// WorkerTally is what Workers counted.
type WorkerTally struct {
	OK, Failed int
	// Errors holds the first few failures, with their time.
	Errors    []string
	ByWorker  map[string]int
	FirstSeen map[string]time.Time
	LastSeen  map[string]time.Time
}

func (t WorkerTally) String() string {
	return fmt.Sprintf("%d ok, %d failed, workers %v", t.OK, t.Failed, t.ByWorker)
}

// Record counts s; pass it as LoadConfig.OnSample.
func (w *Workers) Record(s Sample) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	t := &w.t
	if t.ByWorker == nil {
		t.ByWorker, t.FirstSeen, t.LastSeen = map[string]int{}, map[string]time.Time{}, map[string]time.Time{}
	}
	if s.Kind != KindOK {
		t.Failed++
		if len(t.Errors) < 5 {
			t.Errors = append(t.Errors, fmt.Sprintf("%s %s: %v", now.Format("15:04:05.000"), s.Kind, s.Err))
		}
		return
	}
	t.OK++
	t.ByWorker[s.Worker]++
	t.LastSeen[s.Worker] = now
	if _, ok := t.FirstSeen[s.Worker]; !ok {
		t.FirstSeen[s.Worker] = now
	}
}

// Tally returns a copy of the counts so far.
func (w *Workers) Tally() WorkerTally {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.t
	t.Errors = append([]string(nil), w.t.Errors...)
	t.ByWorker, t.FirstSeen, t.LastSeen = maps.Clone(w.t.ByWorker), maps.Clone(w.t.FirstSeen), maps.Clone(w.t.LastSeen)
	if t.ByWorker == nil {
		t.ByWorker, t.FirstSeen, t.LastSeen = map[string]int{}, map[string]time.Time{}, map[string]time.Time{}
	}
	return t
}
