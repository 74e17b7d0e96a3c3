package suite

import (
	"context"
	"fmt"
	"time"
)

// soakScenario: 0.5 C for the soak duration with sudoku-load; RSS growth
// (least-squares slope over the samples after the first minute of warm-up)
// < 1 MiB/min and 0 errors.
func soakScenario(ctx context.Context, s *suite) result {
	var c checks
	ids := s.workers(ctx)
	idle := s.idle(ctx, ids)
	stopSample := s.sample(ctx, ids, 10*time.Second, false)
	rate := s.half()
	f, err := s.runLoad(ctx, "load", "-url", s.st.baseURL, "-in", s.cfg.Puzzles,
		"-rate", fmt.Sprintf("%.0f", rate), "-c", fmt.Sprint(s.conns(rate)),
		"-duration", s.cfg.SoakDuration.String())
	sm := stopSample()
	if err != nil {
		return c.abort(err)
	}
	sent, _ := f.num("sent")
	recv, _ := f.num("received")
	wrong, _ := f.num("wrong")
	kinds := kindsOf(f)
	nerr := 0.0
	for _, v := range kinds {
		nerr += v
	}
	p99, _ := f.num("latency_ms.p99")
	c.fig("%.0f/s for %v: sent %.0f, received %.0f, wrong %.0f, errors %v, p99 %.1fms", rate, s.cfg.SoakDuration, sent, recv, wrong, kinds, p99)
	c.want(sent > 0 && nerr == 0 && wrong == 0, "errors %v, wrong %.0f", kinds, wrong)
	for _, id := range ids {
		slope := slopeMiBPerMin(sm.series[id], time.Minute)
		c.fig("worker %s RSS idle %s, max %s, growth %.2f MiB/min", short(id), mib(idle[id]), mib(sm.maxRSS[id]), slope)
		c.want(len(sm.series[id]) >= 3, "too few RSS samples for %s", short(id))
		c.want(slope < 1, "worker %s RSS grows %.2f MiB/min >= 1", short(id), slope)
	}
	return c.result()
}

// slopeMiBPerMin fits rss = a + b*t by least squares over points after
// warm and returns b in MiB per minute.
func slopeMiBPerMin(ps []point, warm time.Duration) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, p := range ps {
		if p.t < warm {
			continue
		}
		x := p.t.Minutes()
		y := float64(p.rss) / (1 << 20)
		n++
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	if n < 2 || n*sxx-sx*sx == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}
