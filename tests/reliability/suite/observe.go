package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// workers returns the ids of the running worker containers.
func (s *suite) workers(ctx context.Context) []string {
	ids, err := s.st.containers(ctx, "sudoku", false)
	if err != nil {
		fmt.Fprintf(s.out, "    listing workers: %v\n", err)
	}
	sort.Strings(ids)
	return ids
}

// workerStates returns the running worker containers' ids and states.
func (s *suite) workerStates(ctx context.Context) ([]string, []containerState, error) {
	ids := s.workers(ctx)
	sts, err := s.st.inspect(ctx, ids...)
	return ids, sts, err
}

func (s *suite) nginxID(ctx context.Context) string {
	ids, _ := s.st.containers(ctx, "nginx", false)
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

// listenDrops returns the connections nginx's network namespace has
// dropped at a full listen queue (TcpExt ListenDrops): each costs its
// client a SYN retransmission, 1 s and then doubling.
func (s *suite) listenDrops(ctx context.Context) (int64, error) {
	out, err := s.st.docker(ctx, "exec", s.nginxID(ctx), "cat", "/proc/net/netstat")
	if err != nil {
		return 0, err
	}
	var names []string
	for line := range strings.Lines(out) {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != "TcpExt:" {
			continue
		}
		if names == nil {
			names = fields
			continue
		}
		for i, n := range names {
			if n == "ListenDrops" && i < len(fields) {
				var v int64
				_, err := fmt.Sscan(fields[i], &v)
				return v, err
			}
		}
	}
	return 0, fmt.Errorf("no TcpExt ListenDrops in nginx's /proc/net/netstat")
}

// rssOf returns each worker's resident set size.
func (s *suite) rssOf(ctx context.Context, ids []string) map[string]int64 {
	m := map[string]int64{}
	for _, id := range ids {
		if v, err := s.st.workerRSS(ctx, id); err == nil {
			m[id] = v
		}
	}
	return m
}

// idle waits for the workers to settle and returns their resting RSS.
func (s *suite) idle(ctx context.Context, ids []string) map[string]int64 {
	sleep(ctx, 2*time.Second)
	return s.rssOf(ctx, ids)
}

// samples is what the background sampler saw.
type samples struct {
	mu         sync.Mutex
	maxRSS     map[string]int64   // worker container -> max RSS
	maxNginx   int64              // largest nginx worker RSS
	maxGor     map[string]float64 // worker id (X-Sudoku-Worker) -> max goroutines
	series     map[string][]point // worker container -> RSS over time
	statErrors int
}

type point struct {
	t   time.Duration
	rss int64
}

// sample polls RSS every interval (from /proc: cheap, so it keeps up
// while the machine is saturated) and, with withStats, the workers'
// goroutines from /sudoku/stats once a second, until stop is called.
func (s *suite) sample(ctx context.Context, ids []string, interval time.Duration, withStats bool) (stop func() *samples) {
	sm := &samples{maxRSS: map[string]int64{}, maxGor: map[string]float64{}, series: map[string][]point{}}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	start := time.Now()
	// Host pids, resolved before sampling starts: the worker is PID 1 of
	// its container, nginx workers are found with docker top (again
	// every few seconds, in the background, in case nginx reloads).
	pids := map[string]int{}
	if sts, err := s.st.inspect(ctx, ids...); err == nil {
		for _, c := range sts {
			pids[c.ID] = c.State.Pid
		}
	}
	var nmu sync.Mutex
	var nginxPids []int
	nginx := s.nginxID(ctx)
	findNginx := func() {
		ps, err := s.st.top(ctx, nginx)
		if err != nil {
			return
		}
		var found []int
		for _, p := range ps {
			if strings.Contains(p.Cmd, "nginx: worker process") {
				found = append(found, p.PID)
			}
		}
		nmu.Lock()
		nginxPids = found
		nmu.Unlock()
	}
	if nginx != "" {
		findNginx()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sleep(ctx, 5*time.Second) == nil {
				findNginx()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			for _, id := range ids {
				v, err := hostRSS(pids[id])
				if err != nil {
					continue
				}
				sm.mu.Lock()
				if v > sm.maxRSS[id] {
					sm.maxRSS[id] = v
				}
				sm.series[id] = append(sm.series[id], point{time.Since(start), v})
				sm.mu.Unlock()
			}
			nmu.Lock()
			np := append([]int(nil), nginxPids...)
			nmu.Unlock()
			for _, pid := range np {
				if v, err := hostRSS(pid); err == nil {
					sm.mu.Lock()
					if v > sm.maxNginx {
						sm.maxNginx = v
					}
					sm.mu.Unlock()
				}
			}
			if sleep(ctx, interval) != nil {
				return
			}
		}
	}()
	if withStats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				st := s.stats(ctx, 2*len(ids)+2)
				sm.mu.Lock()
				if len(st) == 0 {
					sm.statErrors++
				}
				for w, m := range st {
					if g, ok := m.num("goroutines"); ok && g > sm.maxGor[w] {
						sm.maxGor[w] = g
					}
				}
				sm.mu.Unlock()
				if sleep(ctx, time.Second) != nil {
					return
				}
			}
		}()
	}
	return func() *samples {
		cancel()
		wg.Wait()
		return sm
	}
}

// flat is a JSON object flattened to dotted keys.
type flat map[string]any

func flatten(prefix string, v any, out flat) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flatten(key, e, out)
		}
	default:
		out[prefix] = v
	}
}

// num finds a number by exact key, or by the last path element.
func (f flat) num(names ...string) (float64, bool) {
	for _, n := range names {
		if v, ok := f[n].(float64); ok {
			return v, true
		}
	}
	for _, n := range names {
		for k, v := range f {
			if x, ok := v.(float64); ok && (strings.HasSuffix(k, "."+n)) {
				return x, true
			}
		}
	}
	return 0, false
}

func (f flat) str(names ...string) string {
	for _, n := range names {
		if v, ok := f[n].(string); ok {
			return v
		}
	}
	return ""
}

// stats fetches /sudoku/stats through nginx up to tries times and returns
// the latest stats of each worker seen (by X-Sudoku-Worker).
func (s *suite) stats(ctx context.Context, tries int) map[string]flat {
	m := map[string]flat{}
	for i := 0; i < tries; i++ {
		st, w, body, err := getOnce(ctx, s.st.baseURL+"/sudoku/stats", 2*time.Second)
		if err != nil || st != 200 {
			continue
		}
		var v map[string]any
		if json.Unmarshal(body, &v) != nil {
			continue
		}
		f := flat{}
		flatten("", v, f)
		if w == "" {
			w = f.str("worker", "worker_id", "id")
		}
		m[w] = f
	}
	return m
}

// waitRunning waits until the container called name runs, for at most limit.
func (s *suite) waitRunning(ctx context.Context, name string, limit time.Duration) {
	for t0 := time.Now(); time.Since(t0) < limit && ctx.Err() == nil; {
		if out, err := s.st.docker(ctx, "inspect", "-f", "{{.State.Running}}", name); err == nil && strings.TrimSpace(out) == "true" {
			return
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

// stackCores is the number of cores the stack runs on.
func (s *suite) stackCores() int {
	if s.iso.stackN > 0 {
		return s.iso.stackN
	}
	return runtime.NumCPU()
}

// getOnce does one GET with its own connection and returns status, the
// worker header and the body.
func getOnce(ctx context.Context, url string, timeout time.Duration) (int, string, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", nil, err
	}
	req.Close = true
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header.Get("X-Sudoku-Worker"), body, err
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
