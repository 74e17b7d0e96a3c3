package suite

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"sudoku-fcgi/cmd/sudoku-load/load"
)

// The scenarios where the work changes under an overload: the puzzles get
// harder (puzzle-mix), a worker joins and is killed (worker-join). Both
// hold the stack to what it guarantees on any machine: only 503s with
// Retry-After fail; answering at least noCollapse of the saturation
// measured in the same run is a bound.

// joinWithin is how soon after its start a joining worker answers, as a
// bound: sudoku-edge's discovery lists it within its resolve interval and
// nginx reloads. On any machine it answers before it is killed.
const joinWithin = 5 * time.Second

// puzzleMix: twice the hard puzzles' saturation, first with the load's
// puzzles for 20 s, then with the hard ones for 30 s, on one schedule and
// its connections.
func puzzleMix(ctx context.Context, s *suite) result {
	var c checks
	hard, _, err := readPuzzles(s.cfg.Hard)
	if err != nil {
		return c.abort(err)
	}
	const easyFor, hardFor, settle = 20 * time.Second, 30 * time.Second, 5 * time.Second
	ref := s.ref.hardSat32
	rate := 2 * ref
	if ref == 0 {
		rate = 2 * s.C
	}
	pool, _, okPQ := s.poolQueue(ctx)
	stopInFlight := s.sampleInFlight(ctx, 100*time.Millisecond)
	// As the overload: a connection per request in flight and no queue in
	// the client past 1,600, so that the stack, not the client, sheds.
	res := drive(ctx, s.st.baseURL, loadSpec{Name: "puzzle-mix", Rate: rate, Duration: easyFor + hardFor,
		Conns: 1600, MaxInFlight: 1600, Puzzles: s.load, Then: hard, ThenAt: easyFor, Timeout: 30 * time.Second}, s.out)
	inFlight := stopInFlight()
	if res.Err != nil {
		return c.abort(res.Err)
	}
	switchAt, end := res.Start.Add(easyFor), res.Start.Add(easyFor+hardFor)

	hardRecs := split(res.Records, easyFor)
	easy := res.Records[:len(res.Records)-len(hardRecs)]
	es, hs := summarize(easy, easyFor), summarize(hardRecs, hardFor)
	js := summarize(split(hardRecs, easyFor+settle), hardFor-settle)
	c.fig("offered %.0f/s (%.1f C; %.2f of the saturation with 32, %.2f of the hard puzzles'): %d easy puzzles for %v, goodput %.0f/s, 503 %.1f%%; then %d hard puzzles for %v, goodput %.0f/s, 503 %.1f%%; the client skipped %d",
		rate, rate/s.C, rate/math.Max(1, s.ref.sat32), rate/math.Max(1, ref), len(s.load), easyFor, es.Goodput, pct(es.Kinds[kindBusy], es.Sent),
		len(hard), hardFor, hs.Goodput, pct(hs.Kinds[kindBusy], hs.Sent), res.Skipped)
	c.want(ref > 0, "the hard puzzles' saturation with 32 in flight not measured: %v", s.ref.err)
	c.bound(ref > 0 && js.Goodput >= noCollapse*ref, fmt.Sprintf(">= %.1f", noCollapse), fmt.Sprintf("hard puzzles' saturation %.0f/s with 32 in flight", ref),
		"goodput from %v after the switch %.0f/s = %.2f of the hard puzzles' saturation", settle, js.Goodput, js.Goodput/math.Max(1, ref))
	all := summarize(res.Records, 0)
	other := all.Sent - all.OK - all.Kinds[kindBusy]
	c.fig("failures other than 503 with Retry-After: %d (%s)%s", other, all.kindsString(), failedWhen(res.Records))
	c.want(other == 0, "%d requests got something other than an answer or a 503 with Retry-After: %s", other, all.kindsString())
	if okPQ {
		for addr, v := range inFlight {
			c.fig("in flight at worker %s p99 %d (pool %d, %d samples)", addr, load.PercentileOfCounts(counts(v), 99), pool, len(v))
		}
	}
	// What the client's clock adds (its wait for the CPU) shows against
	// nginx's own time of the answers.
	if logged, err := s.nginxRequests(ctx, res.Start, end); err == nil {
		var ok []record
		for _, r := range phaseRecords(logged, "puzzle-mix", res.Start) {
			if r.Kind == kindOK && r.At >= easyFor-2*time.Second {
				r.At -= easyFor - 2*time.Second
				ok = append(ok, r)
			}
		}
		c.fig("p99 of the answers in nginx every 1 s from 2 s before the switch (%s): %s", switchAt.Format("15:04:05"), msList(windowP99(ok, 12)))
	} else {
		c.fig("nginx's access log: %v", err)
	}
	return c.result()
}

// workerJoin: under the overload's rate a third worker joins; 25 s later
// it is killed.
func workerJoin(ctx context.Context, s *suite) result {
	var c checks
	ids := s.workers(ctx)
	sat := s.ref.sat32
	rate := 2 * sat
	if sat == 0 {
		rate = 3 * s.C
	}
	const total, joinAfter, killAfter = 75 * time.Second, 20 * time.Second, 25 * time.Second
	drops0, derr := s.listenDrops(ctx)
	done := make(chan *loadResult, 1)
	go func() {
		done <- drive(ctx, s.st.baseURL, loadSpec{Name: "worker-join", Rate: rate, Duration: total,
			Conns: 1600, MaxInFlight: 1600, Puzzles: s.load, Timeout: 30 * time.Second}, s.out)
	}()
	began := time.Now()
	sleep(ctx, joinAfter)
	scale := func(n int) error {
		_, err := s.st.composeCmd(ctx, false, "up", "-d", "--no-deps", "--no-recreate", "--no-build", "--scale", "sudoku="+strconv.Itoa(n), "sudoku")
		return err
	}
	var joinedAt, killedAt time.Time
	var joined string
	jerr := scale(len(ids) + 1)
	if jerr == nil {
		joinedAt = time.Now()
		for _, id := range s.workers(ctx) {
			if !slices.Contains(ids, id) {
				joined = id
			}
		}
		if joined == "" {
			jerr = fmt.Errorf("no new worker after scaling to %d", len(ids)+1)
		}
	}
	var kerr error
	if jerr == nil {
		// At most 55 s in, so that the stack runs 20 s with a worker less.
		sleep(ctx, min(time.Until(joinedAt.Add(killAfter)), time.Until(began.Add(55*time.Second))))
		killedAt = time.Now()
		_, kerr = s.st.docker(ctx, "kill", "-s", "KILL", joined)
	}
	// The workers left, from the kill on: how many GETs they turned away
	// themselves (each a FastCGI round trip, unlike nginx's own 503s).
	busy0, berr := s.workerCounters(ctx)
	res := <-done
	drops1, derr1 := s.listenDrops(ctx)
	busy1, berr1 := s.workerCounters(ctx)
	// Back to the configured workers: the killed one goes (its socket file
	// stays, refused, and sudoku-edge leaves it out).
	if joined != "" {
		s.st.docker(ctx, "rm", "-f", joined)
	}
	rerr := scale(s.cfg.Workers)
	c.want(jerr == nil, "a third worker did not join: %v", jerr)
	c.want(kerr == nil, "killing the worker: %v", kerr)
	c.want(rerr == nil, "scaling back to %d workers: %v", s.cfg.Workers, rerr)
	if res.Err != nil {
		return c.abort(res.Err)
	}
	at := func(t time.Time) time.Duration { return t.Sub(res.Start) }
	sum := res.summary(total)
	other := sum.Sent - sum.OK - sum.Kinds[kindBusy]
	c.fig("offered %.0f/s (%.1f C; saturation %.0f/s) for %v, goodput %.0f/s (%.2f of the saturation with 32), %.1f%% shed with 503, the client skipped %d; latency p99 %s, max %s (the longest wait in nginx's listen queue after a reload)",
		rate, rate/s.C, sat, total, sum.Goodput, sum.Goodput/math.Max(1, sat), pct(sum.Kinds[kindBusy], sum.Sent), res.Skipped, ms(sum.P99), ms(sum.Max))
	c.want(sat > 0, "saturation with 32 in flight not measured: %v", s.ref.err)
	c.bound(sat > 0 && sum.Goodput >= noCollapse*sat, fmt.Sprintf(">= %.1f", noCollapse), s.satRef(),
		"goodput over the run %.2f of the saturation", sum.Goodput/math.Max(1, sat))
	c.fig("failures other than 503 with Retry-After: %d (%s)%s", other, sum.kindsString(), failedWhen(res.Records))
	c.want(other == 0, "%d requests got something other than an answer or a 503 with Retry-After: %s", other, sum.kindsString())
	if err := errors.Join(derr, derr1); err != nil {
		c.fig("connections dropped at nginx's full listen queue: %v", err)
	} else {
		c.fig("connections dropped at nginx's full listen queue: %d", drops1-drops0)
	}
	if jerr != nil || kerr != nil {
		return c.result()
	}
	j, k := at(joinedAt), at(killedAt)
	first, answered := firstAnswerBy(res.Records, short(joined), j)
	afterKill := goodputIn(res.Records, k, total)
	c.fig("worker %s started at %v and first answered a request due %v after; killed at %v; goodput %.0f/s the 10 s before the join, %.0f/s the 10 s before the kill, %.0f/s from the kill on (%.2f of the saturation); 1 s windows from 2 s before the kill: %s",
		short(joined), j.Round(100*time.Millisecond), first.Round(10*time.Millisecond), k.Round(100*time.Millisecond),
		goodputIn(res.Records, j-10*time.Second, j), goodputIn(res.Records, k-10*time.Second, k), afterKill, afterKill/math.Max(1, sat),
		floatList(goodputWindows(res.Records, k-2*time.Second, min(total, k+10*time.Second))))
	if err := errors.Join(berr, berr1); err != nil {
		c.fig("busy 503s from the workers left: %v", err)
	} else {
		c.fig("busy 503s from the workers left, from the kill on: %.0f", busy1.busy-busy0.busy)
	}
	c.bound(answered && first <= joinWithin, fmt.Sprintf("<= %v", joinWithin), s.satRef(),
		"the joining worker's first answer from its start: %s", since(first))
	c.want(answered, "the joining worker never answered in the %v before it was killed", (k - j).Round(100*time.Millisecond))
	c.bound(sat > 0 && afterKill >= noCollapse*sat, fmt.Sprintf(">= %.1f", noCollapse), s.satRef(),
		"goodput from the kill on %.2f of the saturation", afterKill/math.Max(1, sat))
	return c.result()
}

// firstAnswerBy returns how long after t the worker first answered a
// request due then or later, and whether it did.
func firstAnswerBy(recs []record, worker string, t time.Duration) (time.Duration, bool) {
	for _, r := range recs {
		if r.At >= t && r.Kind == kindOK && r.Worker == worker {
			return r.At - t, true
		}
	}
	return -1, false
}

// split returns the records due from at on (recs sorted by At).
func split(recs []record, at time.Duration) []record {
	for i, r := range recs {
		if r.At >= at {
			return recs[i:]
		}
	}
	return nil
}

// goodputIn is the answers per second of the requests due in [from, to).
func goodputIn(recs []record, from, to time.Duration) float64 {
	if to <= from {
		return 0
	}
	n := 0
	for _, r := range recs {
		if r.At >= from && r.At < to && r.Kind == kindOK {
			n++
		}
	}
	return float64(n) / (to - from).Seconds()
}

// goodputWindows is the answers per second of the requests due in each
// whole second from from to to.
func goodputWindows(recs []record, from, to time.Duration) []float64 {
	var vs []float64
	for t := from; t+time.Second <= to; t += time.Second {
		vs = append(vs, goodputIn(recs, t, t+time.Second))
	}
	return vs
}

// since formats a delay: "after 1.5s", or "never" when negative.
func since(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return "after " + d.Round(100*time.Millisecond).String()
}

func pct(n, of int) float64 { return 100 * float64(n) / math.Max(1, float64(of)) }

// floatList formats figures as "1.2 3.4 ..." ("7012" from 100 on).
func floatList(vs []float64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		prec := 1
		if math.Abs(v) >= 100 {
			prec = 0
		}
		parts[i] = strconv.FormatFloat(v, 'f', prec, 64)
	}
	return strings.Join(parts, " ")
}
