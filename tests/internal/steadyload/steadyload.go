// Package steadyload sends a steady, bounded stream of GET requests for the
// edge's end-to-end tests (TLS renewal, scaling) and counts every failure:
// a transport error, a status other than 200 or an empty body.
package steadyload

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Result is what a Load saw.
type Result struct {
	OK, Failed int
	Errors     []string             // the first few failures
	FirstSeen  map[string]time.Time // X-Sudoku-Worker -> first answer
	LastSeen   map[string]time.Time // X-Sudoku-Worker -> last answer
	ByWorker   map[string]int
}

func (r Result) String() string {
	return fmt.Sprintf("%d ok, %d failed, workers %v", r.OK, r.Failed, r.ByWorker)
}

// Load runs Clients goroutines, each sending one request every Interval.
type Load struct {
	mu     sync.Mutex
	res    Result
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start begins sending GET url from clients goroutines; newClient(i) gives
// goroutine i its client (e.g. with or without keep-alive). The total rate
// is bounded by clients/interval.
func Start(url string, clients int, interval time.Duration, newClient func(i int) *http.Client) *Load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Load{cancel: cancel, res: Result{
		FirstSeen: map[string]time.Time{}, LastSeen: map[string]time.Time{}, ByWorker: map[string]int{},
	}}
	for i := range clients {
		c := newClient(i)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			t := time.NewTicker(interval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				l.one(ctx, c, url)
			}
		}()
	}
	return l
}

func (l *Load) one(ctx context.Context, c *http.Client, url string) {
	var worker string
	err := func() error {
		resp, err := c.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || len(body) == 0 {
			return fmt.Errorf("status %d, body %q", resp.StatusCode, body)
		}
		worker = resp.Header.Get("X-Sudoku-Worker")
		return nil
	}()
	if ctx.Err() != nil {
		return // stopped mid-request: not the server's fault
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.res.Failed++
		if len(l.res.Errors) < 5 {
			l.res.Errors = append(l.res.Errors, time.Now().Format("15:04:05.000")+" "+err.Error())
		}
		return
	}
	l.res.OK++
	now := time.Now()
	l.res.ByWorker[worker]++
	l.res.LastSeen[worker] = now
	if _, ok := l.res.FirstSeen[worker]; !ok {
		l.res.FirstSeen[worker] = now
	}
}

// Snapshot returns the counts so far.
func (l *Load) Snapshot() Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.res
	r.Errors = append([]string(nil), l.res.Errors...)
	r.FirstSeen = make(map[string]time.Time, len(l.res.FirstSeen))
	for k, v := range l.res.FirstSeen {
		r.FirstSeen[k] = v
	}
	r.LastSeen = make(map[string]time.Time, len(l.res.LastSeen))
	for k, v := range l.res.LastSeen {
		r.LastSeen[k] = v
	}
	r.ByWorker = make(map[string]int, len(l.res.ByWorker))
	for k, v := range l.res.ByWorker {
		r.ByWorker[k] = v
	}
	return r
}

// Stop ends the load, waits for in-flight requests and returns the result.
func (l *Load) Stop() Result {
	l.cancel()
	l.wg.Wait()
	return l.Snapshot()
}
