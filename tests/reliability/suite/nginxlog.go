package suite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"time"
)

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
// the load, because following it costs dockerd CPU taken from the stack
// (figures: tests/reliability/README.md); logsOverride gives nginx a log
// large enough to hold the whole overload.
func (s *suite) nginxRequests(ctx context.Context, from, until time.Time) ([]loggedRequest, error) {
	host, err := s.st.hostAddress(ctx)
	if err != nil {
		return nil, err
	}
	ng := s.nginxID(ctx)
	if ng == "" {
		return nil, fmt.Errorf("no nginx container")
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
