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
	// Retry is how many times a POST's lines that came back ServerTooBusy
	// or not at all (a 429, 503 or 5xx, a broken stream, a connection lost)
	// are sent again, in one POST per round, after the Retry-After of a
	// 429 or 503; 0 sends each line once. A line
	// counts once, with its last outcome and the latency from its first
	// send. It applies to POSTs only (Size > 0).
	Retry int
	// Progress, if set, is called once a second.
	Progress func(Tick)
}

// Batch sends every puzzle at once (GETs over Conns connections, or POSTs of
// Size lines) and waits for every answer. Latency is per request, from its
// send; the figure that matters is the total time (DurationS) and Throughput.
func Batch(ctx context.Context, cfg BatchConfig) (*Result, error) {
	if cfg.Client == nil || len(cfg.Puzzles) == 0 || cfg.Conns < 1 || cfg.Size < 0 || cfg.Retry < 0 {
		return nil, fmt.Errorf("%w: want a client, puzzles, conns >= 1, size >= 0 and retry >= 0", errConfig)
	}
	start := time.Now()
	rec := newRecorder(start)
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
				cfg.Client.solveBatch(ctx, ps, cfg.Retry, rec)
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
// "ServerTooBusy" or "error: <msg>" (solver.ParseAnswer). Lines answered
// ServerTooBusy or not at all go again in a new POST, up to retry times,
// after the Retry-After of an answer that turned the whole POST away (a
// 429 or 503: nginx spreads it over 1-3 s so that turned-away clients do
// not come back together). Each puzzle counts as one request; its latency
// is from the first POST.
func (c *Client) solveBatch(ctx context.Context, ps []Puzzle, retry int, rec *recorder) {
	for range ps {
		rec.Due()
		rec.Sent()
	}
	t0 := time.Now()
	pending := make([]int, len(ps))
	for i := range pending {
		pending[i] = i
	}
	for round := 0; ; round++ {
		again, wait := c.postLines(ctx, ps, pending, rec, t0)
		if len(again) == 0 {
			return
		}
		if round == retry || ctx.Err() != nil {
			for _, f := range again {
				rec.Done(f.kind, f.received, time.Since(t0))
			}
			return
		}
		pending = pending[:0]
		for _, f := range again {
			pending = append(pending, f.index)
			rec.Resent(f.kind)
		}
		if wait > 0 {
			c.wait(ctx, wait)
		}
	}
}

// maxRetryAfter caps the wait a Retry-After asks for.
const maxRetryAfter = 30 * time.Second

// retryAfter is resp's Retry-After in seconds (RFC 9110; the date form is
// not used by this service), at most maxRetryAfter; 0 without one.
func retryAfter(resp *http.Response) time.Duration {
	return parseRetryAfter(resp.Header.Get("Retry-After"))
}

// parseRetryAfter is a Retry-After value's wait, as retryAfter reads it.
func parseRetryAfter(v string) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || s <= 0 {
		return 0
	}
	return min(time.Duration(s)*time.Second, maxRetryAfter)
}

// unanswered is a line to send again, with the outcome it gets if it is not.
type unanswered struct {
	index    int
	kind     Kind
	received bool
}

// postLines POSTs the lines of ps at indices idx, records every final
// outcome, and returns the lines that came back ServerTooBusy or not at
// all, with the Retry-After of an answer that turned the POST away. A body that ends in an error (a broken stream: the connection cut,
// the chunked encoding unfinished) is never a clean end: its unanswered
// lines get the transport error's kind.
func (c *Client) postLines(ctx context.Context, ps []Puzzle, idx []int, rec *recorder, t0 time.Time) ([]unanswered, time.Duration) {
	var body bytes.Buffer
	for _, i := range idx {
		body.WriteString(strconv.Itoa(i))
		body.WriteByte(':')
		body.WriteString(ps[i].Text)
		body.WriteByte('\n')
	}
	all := func(k Kind, received bool) []unanswered {
		out := make([]unanswered, len(idx))
		for j, i := range idx {
			out[j] = unanswered{i, k, received}
		}
		return out
	}
	// A batch goes to the address GETs go to now; its own failures are
	// resent by the batch's retries, not moved to another address.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.bases[c.cur.Load()], &body)
	if err != nil {
		for range idx {
			rec.Done(KindOther, false, time.Since(t0))
		}
		return nil, 0
	}
	req.Header.Set("Content-Type", "text/plain")
	resp, err := c.http.Do(req)
	if err != nil {
		return all(kindOfError(err), false), 0
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		k := kindOfStatus(resp.StatusCode)
		if (k == Kind4xx && resp.StatusCode != http.StatusTooManyRequests) || k == KindOther {
			for range idx {
				rec.Done(k, true, time.Since(t0))
			}
			return nil, 0
		}
		// 429 (this client's limit), 503 or another 5xx: nothing was answered.
		return all(k, true), retryAfter(resp)
	}
	want := make(map[int]bool, len(idx))
	for _, i := range idx {
		want[i] = true
	}
	var again []unanswered
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		a, ok := solver.ParseAnswer(line)
		i, err := strconv.Atoi(a.ID)
		if !ok || !a.HasID || err != nil || !want[i] {
			continue // not an answer to one of our lines; the line stays unanswered
		}
		delete(want, i)
		lat := time.Since(t0)
		switch {
		case a.Kind == solver.AnswerBusy:
			again = append(again, unanswered{i, KindBusy, true})
		case a.Kind == solver.AnswerNone || a.Kind == solver.AnswerError:
			rec.Done(Kind4xx, true, lat)
		case verify(ps[i].Grid, a.Solution) != nil:
			rec.Done(KindWrong, true, lat)
		default:
			rec.Done(KindOK, true, lat)
		}
	}
	missing := KindOther // the server ended the body cleanly, lines unanswered
	if err := sc.Err(); err != nil {
		missing = kindOfError(err)
	}
	for _, i := range idx { // in idx order, so a retry sends them in order
		if want[i] {
			again = append(again, unanswered{i, missing, false})
		}
	}
	return again, 0
}
