package suite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

func (s *suite) nginxID(ctx context.Context) string {
	ids, _ := s.st.containers(ctx, "nginx", false)
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
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

// runLoad runs sudoku-load with -json, streaming its progress (stderr) to
// the suite's output, and returns the decoded JSON result.
func (s *suite) runLoad(ctx context.Context, args ...string) (flat, error) {
	args = append(args, "-json", "-log-console")
	fmt.Fprintf(s.out, "    $ %s %s\n", s.cfg.LoadBin, strings.Join(args, " "))
	out, err := s.runEchoingStderr(exec.CommandContext(ctx, s.cfg.LoadBin, args...))
	return loadOutput(out, err, s.out)
}

// runLoadFrom runs sudoku-load in a throwaway container on the project's
// network, so its connections come from an address of their own, not the
// host's (which the suite trusts): nginx sees a separate client. The
// puzzle file is /puzzles inside; nginx is http://nginx:8080.
func (s *suite) runLoadFrom(ctx context.Context, name string, args ...string) (flat, error) {
	network, err := s.st.networkName(ctx)
	if err != nil {
		return nil, err
	}
	bin, err := filepath.Abs(s.cfg.LoadBin)
	if err != nil {
		return nil, err
	}
	puzzles, err := filepath.Abs(s.cfg.Puzzles)
	if err != nil {
		return nil, err
	}
	full := s.throwaway(name, network, []string{bin + ":/sudoku-load", puzzles + ":/puzzles"},
		append([]string{"/sudoku-load"}, args...)...)
	full = append(full, "-json", "-log-console")
	fmt.Fprintf(s.out, "    $ docker %s\n", strings.Join(full, " "))
	out, err := s.runEchoingStderr(exec.CommandContext(ctx, "docker", full...))
	return loadOutput(out, err, s.out)
}

// loadOutput decodes sudoku-load's -json output.
func loadOutput(out []byte, err error, log io.Writer) (flat, error) {
	// The JSON object is the last thing on stdout.
	if i := bytes.IndexByte(out, '{'); i >= 0 {
		out = out[i:]
	}
	var v map[string]any
	if jerr := json.Unmarshal(out, &v); jerr != nil {
		if err != nil {
			return nil, fmt.Errorf("sudoku-load: %w", err)
		}
		return nil, fmt.Errorf("decoding sudoku-load -json output: %w (%.200s)", jerr, out)
	}
	f := flat{}
	flatten("", v, f)
	if err != nil {
		// sudoku-load exits non-zero when it saw errors; the JSON still
		// holds the figures.
		fmt.Fprintf(log, "    sudoku-load exited: %v\n", err)
	}
	return f, nil
}

// capacity runs `sudoku-load capacity` and returns C in requests/s. When
// no rate meets the SLO (a shared, busy machine: p99 of a handful of
// requests is their max), it searches again with the fallback SLO and says
// so loudly: the scenarios need a C, and the figures show which one.
func (s *suite) capacity(ctx context.Context) (float64, error) {
	for _, slo := range []time.Duration{s.cfg.SLO, s.cfg.SLOFallback} {
		if slo <= 0 {
			continue
		}
		fmt.Fprintf(s.out, "== capacity (sudoku-load capacity, p99 <= %v)\n", slo)
		f, err := s.runLoad(ctx, "capacity", "-url", s.st.baseURL, "-in", s.cfg.Puzzles,
			"-p99", slo.String(), "-cores", fmt.Sprint(s.stackCores()))
		if err != nil {
			return 0, err
		}
		c, ok := f.num("capacity.rate")
		if ok && c > 0 {
			s.sloUsed = slo
			fmt.Fprintf(s.out, "== capacity C = %.0f req/s at p99 <= %v\n", c, slo)
			return c, nil
		}
		fmt.Fprintf(s.out, "== WARNING: no rate kept p99 <= %v (load average %s)\n", slo, loadAvg())
	}
	return 0, fmt.Errorf("no rate met p99 <= %v or %v", s.cfg.SLO, s.cfg.SLOFallback)
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

// kindsOf returns the error counts of a sudoku-load result, by kind.
func kindsOf(f flat) map[string]float64 {
	m := map[string]float64{}
	for k, v := range f {
		if strings.HasPrefix(k, "errors.") {
			if x, ok := v.(float64); ok && x > 0 {
				m[strings.TrimPrefix(k, "errors.")] = x
			}
		}
	}
	return m
}

// runEchoingStderr runs cmd, echoes its stderr (progress lines) into the
// suite's output as it comes, and returns its stdout.
func (s *suite) runEchoingStderr(cmd *exec.Cmd) ([]byte, error) {
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintf(s.out, "    | %s\n", sc.Text())
		}
		io.Copy(io.Discard, pr) // a line too long for the scanner must not block the command
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	return stdout.Bytes(), err
}

// loggedRequest is one line of nginx's access log.
type loggedRequest struct {
	Time        time.Time `json:"time"` // $time_iso8601: the end, in whole seconds
	RemoteAddr  string    `json:"remote_addr"`
	Status      int       `json:"status"`
	RequestTime float64   `json:"request_time"` // seconds
	UserAgent   string    `json:"user_agent"`   // userAgent(phase)
}

func (e loggedRequest) took() time.Duration {
	return time.Duration(e.RequestTime * float64(time.Second))
}

// nginxTick is the resolution of nginx's request_time: whole milliseconds
// of the clock it reads once per turn of its event loop.
const nginxTick = time.Millisecond

// logFlushDelay is how long nginx may hold a line in its access log
// buffer (nginx.conf: access_log ... flush=1s), plus a margin for Docker.
const logFlushDelay = 2 * time.Second

// nginxRequests returns the suite's requests nginx logged between from and
// until (by nginx's clock, in whole seconds): nginx's own view of them, from
// its JSON access log on the container's stdout, the lines from the host. It
// waits until those lines can have reached Docker.
//
// On a machine where the load client shares the cores with a saturated
// stack, the client's clock also counts its own wait for CPU; nginx's
// request_time is the service's part alone. The log is read once, after
// the load: a `docker logs --follow` during the overload cost dockerd 42%
// of a core (20% without it), taken from the stack it measured; re-reading
// the log every few seconds cost half a core for 2 s of every 5. The suite
// gives nginx a log large enough to hold the whole overload
// (logsOverride).
func (s *suite) nginxRequests(ctx context.Context, from, until time.Time) ([]loggedRequest, error) {
	host, err := s.st.hostAddress(ctx)
	if err != nil {
		return nil, err
	}
	ng := s.nginxID(ctx)
	if ng == "" {
		return nil, errors.New("no nginx container")
	}
	sleep(ctx, time.Until(until.Add(logFlushDelay)))
	// Docker stamps a line when it reads it, later than nginx wrote it.
	cmd := exec.CommandContext(ctx, "docker", "logs",
		"--since", from.Add(-time.Second).UTC().Format(time.RFC3339Nano),
		"--until", until.Add(logFlushDelay).UTC().Format(time.RFC3339Nano), ng)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = io.Discard // nginx's error log and sudoku-edge's lines
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	want := []byte(`"user_agent":"` + userAgent(""))
	var reqs []loggedRequest
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, want) {
			continue
		}
		var e loggedRequest
		if json.Unmarshal(line, &e) != nil || e.RemoteAddr != host {
			continue
		}
		if !e.Time.Before(from.Truncate(time.Second)) && !e.Time.After(until) {
			reqs = append(reqs, e)
		}
	}
	io.Copy(io.Discard, out)
	if err := sc.Err(); err != nil {
		cmd.Wait()
		return nil, err
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("docker logs: %w", err)
	}
	return reqs, nil
}

// phaseTimes returns nginx's request times of one load phase's requests
// with status.
func phaseTimes(reqs []loggedRequest, phase string, status int) []time.Duration {
	var ts []time.Duration
	for _, e := range reqs {
		if e.UserAgent == userAgent(phase) && e.Status == status {
			ts = append(ts, e.took())
		}
	}
	return ts
}

// phaseRecords turns one load phase's lines into records timed by nginx:
// At is the whole second the request ended in, counted from the second
// the phase started in.
func phaseRecords(reqs []loggedRequest, phase string, start time.Time) []record {
	var recs []record
	for _, e := range reqs {
		if e.UserAgent != userAgent(phase) {
			continue
		}
		r := record{At: e.Time.Sub(start.Truncate(time.Second)), Latency: e.took(), Status: e.Status, Kind: kindOK}
		if e.Status != http.StatusOK {
			r.Kind = fmt.Sprintf("%d", e.Status)
		}
		recs = append(recs, r)
	}
	return recs
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
