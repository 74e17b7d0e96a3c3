package suite

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The scenarios "it adapts": the admission controller (nginx/admission)
// follows a change of the work per request (puzzle-mix) and of the number
// of workers (worker-join). Both read what the law reads: the workers'
// /metrics and sudoku-edge's own (-metrics-listen).

// inFlightTarget is the law's ceiling of the workers' mean requests in
// flight per solver slot, above which it cuts the rate (nginx/admission,
// DefaultConfig).
const inFlightTarget = 3

// edgeMetricsPort is where sudoku-edge serves /metrics in the nginx
// container (its -metrics-listen default, as docker/prometheus scrapes it).
const edgeMetricsPort = "9145"

// puzzleMix: 2 C of the load's puzzles for 20 s (or 1.5 x the hard
// puzzles' saturation, below), then of the hard puzzles at the same rate
// for 30 s, on one schedule and its connections.
func puzzleMix(ctx context.Context, s *suite) result {
	var c checks
	hard, _, err := readPuzzles(s.cfg.Hard)
	if err != nil {
		return c.abort(err)
	}
	adapts, mode := s.controllerAdapts(ctx)
	byAddr, err := s.workerMetricsURLs(ctx)
	if err != nil {
		return c.abort(err)
	}
	workers := slices.Collect(maps.Values(byAddr))
	urls := workers
	edge, eerr := s.edgeMetricsURL(ctx)
	if eerr == nil {
		urls = append(slices.Clone(workers), edge)
	}
	const easyFor, hardFor, settle = 20 * time.Second, 30 * time.Second, 5 * time.Second
	// max(2 C, 1.5 x the hard puzzles' saturation with 32 in flight), so
	// that the hard puzzles overload the stack even when C comes out low:
	// where a request's cost is mostly the path's, not the solver's, the
	// hard ones cost well under 30 easy ones (measureReferences prints both
	// saturations).
	ref := s.ref.hardSat32
	rate := max(2*s.C, 1.5*ref)
	stopPoll := pollMetrics(ctx, urls, time.Second)
	// As the overload: a connection per request in flight and no queue in
	// the client past 1,600, so that the stack, not the client, sheds.
	res := drive(ctx, s.st.baseURL, loadSpec{Name: "puzzle-mix", Rate: rate, Duration: easyFor + hardFor,
		Conns: 1600, MaxInFlight: 1600, Puzzles: s.load, Then: hard, ThenAt: easyFor, Timeout: 30 * time.Second}, s.out)
	rounds := stopPoll()
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
	c.fig("goodput from %v after the switch %.0f/s = %.2f of the hard puzzles' saturation with 32 in flight (%.0f/s, controller off)",
		settle, js.Goodput, js.Goodput/math.Max(1, ref), ref)
	c.want(ref > 0, "the hard puzzles' saturation with 32 in flight not measured: %v", s.ref.err)
	c.want(ref == 0 || js.Goodput >= 0.8*ref, "goodput %.0f/s from %v after the switch < 0.8 of the hard puzzles' saturation = %.0f/s", js.Goodput, settle, 0.8*ref)
	all := summarize(res.Records, 0)
	other := all.Sent - all.OK - all.Kinds[kindBusy]
	c.fig("failures other than 503: %d (%s)", other, all.kindsString())
	c.want(other == 0, "%d requests got something other than an answer or a 503: %s", other, all.kindsString())

	// The workers as the law sees them, over 1 s windows.
	ws := workerWindows(rounds, workers)
	var after []float64
	var waits []time.Duration
	var over time.Duration // end of the last window over target, from the switch
	judgedN, overN := 0, 0
	for _, w := range ws {
		if w.to.Before(switchAt) || w.from.After(end) {
			continue
		}
		if w.to.Before(switchAt.Add(10 * time.Second)) {
			after = append(after, w.inFlightPerSlot)
			waits = append(waits, w.queueWait)
		}
		if w.inFlightPerSlot > inFlightTarget {
			over = w.to.Sub(switchAt)
		}
		if !w.from.Before(switchAt.Add(settle)) && !w.to.After(end) {
			judgedN++
			if w.inFlightPerSlot > inFlightTarget {
				overN++
			}
		}
	}
	c.fig("workers' requests in flight per slot (1 s windows, mean as the law reads it) the first 10 s after the switch: %s; over %d until %v after it; %d of %d windows from %v on over it",
		floatList(after), inFlightTarget, over.Round(100*time.Millisecond), overN, judgedN, settle)
	c.fig("workers' mean queue wait, the same windows: %s", msList(waits))
	busy := busyBetween(rounds, workers, switchAt, end)
	hard503 := hs.Kinds[kindBusy]
	c.fig("busy 503s from the workers in the hard phase %.0f (%.2f%% of its %d 503s)", busy, 100*busy/math.Max(1, float64(hard503)), hard503)
	if eerr == nil {
		c.fig("admitted rate (sudoku_edge_admission_rate) from 2 s before the switch, every 1 s: %s", floatList(gaugeValues(rounds, edge, "sudoku_edge_admission_rate", switchAt.Add(-2*time.Second), switchAt.Add(10*time.Second))))
	} else {
		c.fig("sudoku-edge's metrics: %v", eerr)
	}
	// What the workers' metrics cannot see: a request waiting in a worker
	// before its handler starts (for a connection's turn, for the CPU)
	// shows only in nginx's time of it.
	if logged, err := s.nginxRequests(ctx, res.Start, end); err == nil {
		var ok []record
		for _, r := range phaseRecords(logged, "puzzle-mix", res.Start) {
			if r.Kind == kindOK && r.At >= easyFor-2*time.Second {
				r.At -= easyFor - 2*time.Second
				ok = append(ok, r)
			}
		}
		c.fig("p99 of the answers in nginx every 1 s from 2 s before the switch: %s", msList(windowP99(ok, 12)))
	} else {
		c.fig("nginx's access log: %v", err)
	}
	if !adapts {
		c.fig("in flight per slot and busy 503s not judged: not applicable with %s", mode)
		return c.result()
	}
	c.want(judgedN >= int((hardFor-settle)/time.Second)/2, "only %d 1 s windows of the workers' metrics from %v after the switch", judgedN, settle)
	c.want(overN == 0, "in flight per slot over %d in %d windows from %v after the switch (until %v after it)", inFlightTarget, overN, settle, over.Round(100*time.Millisecond))
	c.want(busy <= 0.01*float64(hard503), "the workers answered %.0f busy 503s in the hard phase > 1%% of its %d 503s", busy, hard503)
	return c.result()
}

// workerJoin: under the overload a worker joins, 25 s later it is killed.
func workerJoin(ctx context.Context, s *suite) result {
	var c checks
	adapts, mode := s.controllerAdapts(ctx)
	edge, eerr := s.edgeMetricsURL(ctx)
	if eerr != nil {
		return c.abort(eerr)
	}
	ids := s.workers(ctx)
	sat := s.ref.sat32
	rate := max(3*s.C, 2*sat)
	const total, joinAfter, killAfter, within = 75 * time.Second, 20 * time.Second, 25 * time.Second, 10 * time.Second
	stopPoll := pollMetrics(ctx, []string{edge}, 500*time.Millisecond)
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
	res := <-done
	rounds := stopPoll()
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
	c.fig("offered %.0f/s (%.1f C; saturation %.0f/s) for %v, goodput %.0f/s (%.2f of the saturation with 32), %.1f%% shed with 503, the client skipped %d",
		rate, rate/s.C, sat, total, sum.Goodput, sum.Goodput/math.Max(1, sat), pct(sum.Kinds[kindBusy], sum.Sent), res.Skipped)
	c.want(sat > 0, "saturation with 32 in flight not measured: %v", s.ref.err)
	c.want(sat == 0 || sum.Goodput >= 0.8*sat, "goodput %.0f/s < 0.8 of the saturation with 32 in flight = %.0f/s", sum.Goodput, 0.8*sat)
	c.fig("failures other than 503: %d (%s)", other, sum.kindsString())
	c.want(other == 0, "%d requests got something other than an answer or a 503: %s", other, sum.kindsString())
	if jerr != nil || kerr != nil {
		return c.result()
	}
	j, k := at(joinedAt), at(killedAt)
	c.fig("worker %s joined at %v (%s), killed at %v; goodput %.0f/s the 10 s before the join, %.0f/s the 10 s before the kill, %.0f/s from 5 s after it",
		short(joined), j.Round(100*time.Millisecond), firstAnswer(res.Records, j), k.Round(100*time.Millisecond),
		goodputIn(res.Records, j-10*time.Second, j), goodputIn(res.Records, k-10*time.Second, k), goodputIn(res.Records, k+5*time.Second, total))
	name := "sudoku_edge_admission_rate"
	for _, ev := range []struct {
		what string
		t    time.Time
	}{{"join", joinedAt}, {"kill", killedAt}} {
		from, to := ev.t.Add(-2*time.Second), ev.t.Add(within)
		c.fig("every 1 s from 2 s before the %s: admitted rate %s; in flight per slot (sudoku-edge) %s; goodput %s",
			ev.what, floatList(gaugeValues(rounds, edge, name, from, to)),
			floatList(gaugeValues(rounds, edge, "sudoku_edge_admission_workers_in_flight_per_slot", from, to)),
			floatList(goodputWindows(res.Records, at(from), at(to))))
	}
	if !adapts {
		c.fig("the admitted rate's rise and fall: not applicable with %s", mode)
		return c.result()
	}
	before, _, hi, rose, _ := gaugeMove(rounds, edge, name, joinedAt, within)
	c.fig("admitted rate %.0f/s at the join, at most %.0f/s within %v (first higher: %s)", before, hi, within, since(rose))
	c.want(rose >= 0, "the admitted rate did not rise within %v of the join (%.0f/s, at most %.0f/s)", within, before, hi)
	before, lo, _, _, fell := gaugeMove(rounds, edge, name, killedAt, within)
	c.fig("admitted rate %.0f/s at the kill, at least %.0f/s within %v (first lower: %s)", before, lo, within, since(fell))
	c.want(fell >= 0, "the admitted rate did not fall within %v of the kill (%.0f/s, at least %.0f/s)", within, before, lo)
	return c.result()
}

// controllerAdapts reports whether sudoku-edge's admission controller
// follows the workers (-admission auto: it takes decisions), and names the
// mode for a figure.
func (s *suite) controllerAdapts(ctx context.Context) (bool, string) {
	mode := "-admission " + orDefault(s.cfg.Admission, "as the stack sets it")
	u, err := s.edgeMetricsURL(ctx)
	if err != nil {
		return s.cfg.Admission != "off", mode
	}
	m, err := scrapeMetrics(ctx, u)
	if err != nil {
		return s.cfg.Admission != "off", mode
	}
	// Off or a fixed rate takes no decision (nginx/admission, Loop.run).
	return sumSeries(m, "sudoku_edge_admission_decisions_total") > 0, mode
}

// edgeMetricsURL is sudoku-edge's /metrics at the nginx container's
// address on the compose network.
func (s *suite) edgeMetricsURL(ctx context.Context) (string, error) {
	id := s.nginxID(ctx)
	if id == "" {
		return "", fmt.Errorf("no nginx container")
	}
	st, err := s.st.inspect(ctx, id)
	if err != nil {
		return "", err
	}
	for _, n := range st[0].NetworkSettings.Networks {
		if n.IPAddress != "" {
			return "http://" + net.JoinHostPort(n.IPAddress, edgeMetricsPort) + "/metrics", nil
		}
	}
	return "", fmt.Errorf("the nginx container has no address on the compose network")
}

// scraped is one scrape of one /metrics.
type scraped struct {
	at time.Time
	m  map[string]float64
}

// metricRound is one scrape of every URL polled, by URL; a URL whose
// scrape failed is missing.
type metricRound map[string]scraped

// pollMetrics scrapes every URL (at once) every interval until stop, which
// returns the rounds.
func pollMetrics(ctx context.Context, urls []string, every time.Duration) (stop func() []metricRound) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan []metricRound, 1)
	go func() {
		var rounds []metricRound
		for {
			r := metricRound{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for _, u := range urls {
				wg.Go(func() {
					m, err := scrapeMetrics(ctx, u)
					if err == nil {
						mu.Lock()
						r[u] = scraped{time.Now(), m}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			rounds = append(rounds, r)
			if sleep(ctx, every) != nil {
				done <- rounds
				return
			}
		}
	}()
	return func() []metricRound {
		cancel()
		return <-done
	}
}

// workerWindow is what the workers did between two rounds, together.
type workerWindow struct {
	from, to time.Time
	// inFlightPerSlot is the law's signal: the workers' request seconds
	// per second (their mean requests in flight, Little's law) over their
	// solver slots.
	inFlightPerSlot float64
	queueWait       time.Duration // mean wait for a slot
}

// workerWindows turns consecutive rounds into windows over the workers
// scraped in both (a worker whose counters went back, restarted, is left
// out of that window).
func workerWindows(rounds []metricRound, urls []string) []workerWindow {
	var ws []workerWindow
	for i := 1; i < len(rounds); i++ {
		var w workerWindow
		var inFlight, slots, waits, waited float64
		for _, u := range urls {
			p, ok1 := rounds[i-1][u]
			q, ok2 := rounds[i][u]
			dt := q.at.Sub(p.at).Seconds()
			d := func(name string) float64 { return q.m[name] - p.m[name] }
			if !ok1 || !ok2 || dt <= 0 || d("sudoku_fastcgi_request_seconds_total") < 0 || d("sudoku_queue_wait_seconds_count") < 0 {
				continue
			}
			if w.from.IsZero() || p.at.Before(w.from) {
				w.from = p.at
			}
			w.to = maxTime(w.to, q.at)
			inFlight += d("sudoku_fastcgi_request_seconds_total") / dt
			slots += q.m["sudoku_pool_slots"]
			waits += d("sudoku_queue_wait_seconds_count")
			waited += d("sudoku_queue_wait_seconds_sum")
		}
		if slots == 0 {
			continue
		}
		w.inFlightPerSlot = inFlight / slots
		if waits > 0 {
			w.queueWait = time.Duration(math.Round(waited / waits * float64(time.Second)))
		}
		ws = append(ws, w)
	}
	return ws
}

// busyBetween sums the workers' busy 503s between the last round at or
// before from and the last round at or before to, by worker.
func busyBetween(rounds []metricRound, urls []string, from, to time.Time) float64 {
	var total float64
	for _, u := range urls {
		var first, last *scraped
		for _, r := range rounds {
			sc, ok := r[u]
			if !ok || sc.at.After(to) {
				continue
			}
			if first == nil || !sc.at.After(from) {
				first = &sc
			}
			last = &sc
		}
		if first != nil && last != nil {
			b := `route="get",outcome="too_busy"`
			total += max(0, sumSeries(last.m, "sudoku_requests_total", b)-sumSeries(first.m, "sudoku_requests_total", b))
		}
	}
	return total
}

// sumSeries sums the samples of a metric whose labels include every
// pair of want (`a="x",b="y"`, in any order; none: every sample).
func sumSeries(m map[string]float64, name string, want ...string) float64 {
	var pairs []string
	for _, w := range want {
		pairs = append(pairs, splitLabels(w)...)
	}
	var sum float64
	for k, v := range m {
		n, labels, _ := strings.Cut(k, "{")
		if n != name {
			continue
		}
		have := splitLabels(strings.TrimSuffix(labels, "}"))
		ok := true
		for _, p := range pairs {
			ok = ok && slices.Contains(have, p)
		}
		if ok {
			sum += v
		}
	}
	return sum
}

// splitLabels splits `a="x",b="y"` into its pairs (label values without
// commas, as the suite reads them).
func splitLabels(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// gaugeValues is a gauge of one URL from from to to, one figure a second:
// the last scrape of each second, NaN for a second without one.
func gaugeValues(rounds []metricRound, url, name string, from, to time.Time) []float64 {
	vs := make([]float64, int(to.Sub(from)/time.Second))
	for i := range vs {
		vs[i] = math.NaN()
	}
	for _, r := range rounds {
		sc, ok := r[url]
		if v, has := sc.m[name]; ok && has && !sc.at.Before(from) {
			if i := int(sc.at.Sub(from) / time.Second); i < len(vs) {
				vs[i] = v
			}
		}
	}
	return vs
}

// gaugeMove reads a gauge of one URL around an event at t: its last value
// at or before t, its lowest and highest after t up to t + within, and
// how long after t it first went above (up) and below (down) the value at
// t, -1 when it did not.
func gaugeMove(rounds []metricRound, url, name string, t time.Time, within time.Duration) (before, lo, hi float64, up, down time.Duration) {
	before, lo, hi = math.NaN(), math.Inf(1), math.Inf(-1)
	up, down = -1, -1
	for _, r := range rounds {
		sc, ok := r[url]
		v, has := sc.m[name]
		switch {
		case !ok || !has:
		case !sc.at.After(t):
			before = v
		case sc.at.Sub(t) <= within:
			lo, hi = math.Min(lo, v), math.Max(hi, v)
			if v > before && up < 0 {
				up = sc.at.Sub(t)
			}
			if v < before && down < 0 {
				down = sc.at.Sub(t)
			}
		}
	}
	return before, lo, hi, up, down
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

// firstAnswer says when a worker not seen before t first answered.
func firstAnswer(recs []record, t time.Duration) string {
	seen := map[string]bool{}
	for _, r := range recs {
		if r.At < t {
			seen[r.Worker] = true
		} else if r.Kind == kindOK && r.Worker != "" && !seen[r.Worker] {
			return fmt.Sprintf("worker %s first answered a request due %v after", r.Worker, (r.At - t).Round(10*time.Millisecond))
		}
	}
	return "no new worker answered"
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// since formats a gaugeMove delay: "after 1.5s", or "never".
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
