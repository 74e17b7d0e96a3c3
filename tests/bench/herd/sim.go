package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Policy is how a balancer picks the server for a request.
type Policy int

const (
	Random      Policy = iota // uniformly at random
	RoundRobin                // each balancer cycles through the servers from its own offset
	LeastLoaded               // the server with the fewest requests in the balancer's view
	TwoChoices                // two distinct servers at random, the one with fewer in the view
)

func (p Policy) String() string {
	switch p {
	case Random:
		return "random"
	case RoundRobin:
		return "round robin"
	case LeastLoaded:
		return "least-loaded"
	case TwoChoices:
		return "two choices"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// Config is one simulated point: B balancers in front of S single-core FIFO
// servers, Poisson arrivals spread evenly over the balancers.
type Config struct {
	Balancers, Servers int
	Policy             Policy
	// Stale is the age of the load information: each balancer copies every
	// server's queue length once per Stale, at its own phase, and picks from
	// that copy until the next one. 0 means it reads the live lengths.
	// Random and RoundRobin read no load.
	Stale time.Duration
	// Own makes each balancer count only the requests it sent itself and
	// that have not finished (exact, but blind to the other balancers'), as
	// an nginx without a shared zone, or each of several nginx instances,
	// does for least_conn. Stale is then ignored.
	Own bool
	// Utilisation is the offered load over the servers' capacity (0-1).
	Utilisation float64
	// Costs is the service-time sample each request draws from uniformly.
	Costs []time.Duration
	// Requests are measured after Warmup requests that are not.
	Requests, Warmup int
	Seed             uint64
}

// Stats is what one point measured.
type Stats struct {
	P50, P99 time.Duration // time in the system: queueing plus service
	// MaxQueue is the most requests that were ever at one server at once
	// (the one in service included), seen when a request arrived there.
	MaxQueue int
	// Busy is the servers' busy time over their total time.
	Busy float64
}

// server is a FIFO queue served by one core: done holds the completion
// times of the requests that have not finished, oldest first.
type server struct {
	done []int64
	head int
}

// at drops the requests finished by t and returns how many remain.
func (s *server) at(t int64) int {
	for s.head < len(s.done) && s.done[s.head] <= t {
		s.head++
	}
	if s.head > 1024 && s.head*2 > len(s.done) {
		n := copy(s.done, s.done[s.head:])
		s.done, s.head = s.done[:n], 0
	}
	return len(s.done) - s.head
}

// add queues a request arriving at t that needs cost, and returns when it
// finishes.
func (s *server) add(t, cost int64) int64 {
	start := t
	if n := len(s.done); n > s.head && s.done[n-1] > t {
		start = s.done[n-1]
	}
	s.done = append(s.done, start+cost)
	return start + cost
}

// balancer is one balancer's state: its round-robin position and its view
// of the servers' queue lengths with the time it is next refreshed.
type balancer struct {
	next    int
	view    []int
	refresh int64
	pending completions // with Own: the balancer's unfinished requests
}

// completion is a request a balancer sent: when it ends and where.
type completion struct {
	end    int64
	server int
}

// completions is a min-heap of completions by end time.
type completions []completion

func (h *completions) push(c completion) {
	*h = append(*h, c)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if q[p].end <= q[i].end {
			break
		}
		q[p], q[i] = q[i], q[p]
		i = p
	}
}

func (h *completions) pop() completion {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < n && q[l].end < q[small].end {
			small = l
		}
		if r := l + 1; r < n && q[r].end < q[small].end {
			small = r
		}
		if small == i {
			break
		}
		q[i], q[small] = q[small], q[i]
		i = small
	}
	*h = q
	return top
}

// Simulate runs one point. Time is simulated in nanoseconds; the result
// depends only on c (the seed included), never on the machine.
func Simulate(c Config) (Stats, error) {
	if err := c.check(); err != nil {
		return Stats{}, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x5d0c0))
	var mean float64
	for _, d := range c.Costs {
		mean += float64(d)
	}
	mean /= float64(len(c.Costs))
	gap := mean / (c.Utilisation * float64(c.Servers)) // mean time between arrivals

	servers := make([]server, c.Servers)
	bals := make([]balancer, c.Balancers)
	stale := int64(c.Stale)
	usesView := c.Policy == LeastLoaded || c.Policy == TwoChoices
	for i := range bals {
		bals[i].next = rng.IntN(c.Servers)
		bals[i].view = make([]int, c.Servers)
		if stale > 0 && !c.Own {
			bals[i].refresh = rng.Int64N(stale)
		}
	}

	lat := make([]int64, 0, c.Requests)
	var st Stats
	var t, busy, measureFrom int64
	for i := range c.Warmup + c.Requests {
		t += int64(rng.ExpFloat64() * gap)
		b := &bals[rng.IntN(c.Balancers)]
		if usesView && c.Own {
			for len(b.pending) > 0 && b.pending[0].end <= t {
				b.view[b.pending.pop().server]--
			}
		}
		if usesView && !c.Own && stale == 0 {
			for j := range servers {
				b.view[j] = servers[j].at(t)
			}
		}
		if usesView && !c.Own && stale > 0 {
			refreshUntil(bals, servers, t, stale)
		}
		j := pick(c.Policy, b, rng)
		s := &servers[j]
		cost := int64(c.Costs[rng.IntN(len(c.Costs))])
		q := s.at(t) + 1
		end := s.add(t, cost)
		if usesView && c.Own {
			b.view[j]++
			b.pending.push(completion{end, j})
		}
		if i == c.Warmup {
			measureFrom = t
		}
		if i >= c.Warmup {
			lat = append(lat, end-t)
			busy += cost
			st.MaxQueue = max(st.MaxQueue, q)
		}
	}
	slices.Sort(lat)
	st.P50 = time.Duration(lat[len(lat)/2])
	st.P99 = time.Duration(lat[len(lat)*99/100])
	if span := t - measureFrom; span > 0 {
		st.Busy = float64(busy) / (float64(span) * float64(c.Servers))
	}
	return st, nil
}

// refreshUntil takes every view copy due by t, in time order, so that each
// copy holds the queue lengths at its own refresh time.
func refreshUntil(bals []balancer, servers []server, t, stale int64) {
	for {
		k := -1
		for i := range bals {
			if bals[i].refresh <= t && (k < 0 || bals[i].refresh < bals[k].refresh) {
				k = i
			}
		}
		if k < 0 {
			return
		}
		b := &bals[k]
		for j := range servers {
			b.view[j] = servers[j].at(b.refresh)
		}
		b.refresh += stale
	}
}

// pick returns the server the policy chooses from b's view. Ties go to a
// server drawn at random among the tied, so that a balancer seeing many idle
// servers spreads over them instead of piling onto the first.
func pick(p Policy, b *balancer, rng *rand.Rand) int {
	n := len(b.view)
	switch p {
	case RoundRobin:
		j := b.next
		b.next = (b.next + 1) % n
		return j
	case LeastLoaded:
		best, ties := 0, 0
		for j, q := range b.view {
			switch {
			case ties == 0 || q < b.view[best]:
				best, ties = j, 1
			case q == b.view[best]:
				ties++
				if rng.IntN(ties) == 0 {
					best = j
				}
			}
		}
		return best
	case TwoChoices:
		if n == 1 {
			return 0
		}
		x := rng.IntN(n)
		y := rng.IntN(n - 1)
		if y >= x {
			y++
		}
		if b.view[y] < b.view[x] || (b.view[y] == b.view[x] && rng.IntN(2) == 0) {
			return y
		}
		return x
	}
	return rng.IntN(n)
}

func (c Config) check() error {
	switch {
	case c.Balancers < 1 || c.Servers < 1:
		return fmt.Errorf("need at least one balancer and one server, got %d and %d", c.Balancers, c.Servers)
	case c.Utilisation <= 0 || c.Utilisation >= 1:
		return fmt.Errorf("utilisation %g outside (0, 1)", c.Utilisation)
	case len(c.Costs) == 0:
		return fmt.Errorf("no service times")
	case c.Requests < 100:
		return fmt.Errorf("requests %d: need at least 100 for a p99", c.Requests)
	case c.Warmup < 0 || c.Stale < 0:
		return fmt.Errorf("negative warm-up or staleness")
	case c.Policy < Random || c.Policy > TwoChoices:
		return fmt.Errorf("unknown policy %d", int(c.Policy))
	}
	for _, d := range c.Costs {
		if d <= 0 {
			return fmt.Errorf("service time %v is not positive", d)
		}
	}
	return nil
}
