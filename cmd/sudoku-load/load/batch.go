package load

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"sudoku-fcgi/solver"
)

// BatchConfig configures Batch.
type BatchConfig struct {
	Client  *Client
	Puzzles []Puzzle
	Target  string
	// Conns is the number of requests in flight at once.
	Conns int
	// Size is the number of puzzles per POST /sudoku request; 0 sends one
	// GET per puzzle instead.
	Size int
	// Progress, if set, is called once a second.
	Progress func(Tick)
}

// Batch sends every puzzle at once (GETs over Conns connections, or POSTs of
// Size lines) and waits for every answer. Latency is per request, from its
// send; the figure that matters is the total time (DurationS) and Throughput.
func Batch(ctx context.Context, cfg BatchConfig) (*Result, error) {
	if cfg.Client == nil || len(cfg.Puzzles) == 0 || cfg.Conns < 1 || cfg.Size < 0 {
		return nil, fmt.Errorf("%w: want a client, puzzles, conns >= 1 and size >= 0", ErrConfig)
	}
	start := time.Now()
	rec := NewRecorder(start)
	stopTicks := startTicker(rec, start, cfg.Progress)

	// Work items are index ranges into Puzzles: one puzzle each for GET.
	size := max(cfg.Size, 1)
	work := make(chan [2]int, len(cfg.Puzzles)/size+1)
	for lo := 0; lo < len(cfg.Puzzles); lo += size {
		work <- [2]int{lo, min(lo+size, len(cfg.Puzzles))}
	}
	close(work)

	var wg sync.WaitGroup
	for range cfg.Conns {
		wg.Go(func() {
			for w := range work {
				ps := cfg.Puzzles[w[0]:w[1]]
				if ctx.Err() != nil {
					for range ps {
						rec.Due()
						rec.Unsent()
					}
					continue
				}
				if cfg.Size == 0 {
					rec.Due()
					rec.Sent()
					t0 := time.Now()
					out := cfg.Client.Solve(ctx, ps[0])
					rec.Done(out.Kind, out.Received, time.Since(t0))
					continue
				}
				cfg.Client.solveBatch(ctx, ps, rec)
			}
		})
	}
	wg.Wait()
	end := time.Now()
	stopTicks(end)

	return finish(ctx, rec, &Result{Mode: "batch", Target: cfg.Target, Connections: cfg.Conns}, end.Sub(start))
}

// solveBatch POSTs ps as "<index>:<puzzle>" lines and checks every answer
// line, which may come in any order: "<index>:<solution>", "NoSolution",
// "ServerTooBusy" or "error: <msg>". Each puzzle counts as one request; its
// latency is the whole POST's.
func (c *Client) solveBatch(ctx context.Context, ps []Puzzle, rec *Recorder) {
	var body bytes.Buffer
	for i, p := range ps {
		body.WriteString(strconv.Itoa(i))
		body.WriteByte(':')
		body.WriteString(p.Text)
		body.WriteByte('\n')
	}
	for range ps {
		rec.Due()
		rec.Sent()
	}
	t0 := time.Now()
	failAll := func(k Kind, received bool) {
		for range ps {
			rec.Done(k, received, time.Since(t0))
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base, &body)
	if err != nil {
		failAll(KindOther, false)
		return
	}
	req.Header.Set("Content-Type", "text/plain")
	resp, err := c.http.Do(req)
	if err != nil {
		failAll(KindOfError(err), false)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		failAll(KindOfStatus(resp.StatusCode), true)
		return
	}
	answered := make([]bool, len(ps))
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		a, ok := solver.ParseAnswer(line)
		i, err := strconv.Atoi(a.ID)
		if !ok || !a.HasID || err != nil || i < 0 || i >= len(ps) || answered[i] {
			continue // not an answer to one of our lines; the line stays unanswered
		}
		answered[i] = true
		lat := time.Since(t0)
		switch {
		case a.Kind == solver.AnswerBusy:
			rec.Done(KindBusy, true, lat)
		case a.Kind != solver.AnswerSolved:
			rec.Done(Kind4xx, true, lat)
		case Verify(ps[i].Grid, a.Solution) != nil:
			rec.Done(KindWrong, true, lat)
		default:
			rec.Done(KindOK, true, lat)
		}
	}
	missing := KindOther // the server left lines unanswered
	if err := sc.Err(); err != nil {
		missing = KindOfError(err)
	}
	for _, ok := range answered {
		if !ok {
			rec.Done(missing, false, time.Since(t0))
		}
	}
}
