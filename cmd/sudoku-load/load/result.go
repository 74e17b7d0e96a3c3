package load

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Result is the outcome of any mode. Its JSON form is a stable schema: every
// key is always present (capacity, stress and local are null when they do not
// apply), and errors always holds every kind.
type Result struct {
	Mode string `json:"mode"`
	// Start is when the run's first request was due (Load: the origin of
	// every Sample's Due).
	Start       time.Time `json:"-"`
	Target      string    `json:"target"`
	Connections int       `json:"connections"`
	Rate        float64   `json:"rate"`       // requested rate, requests/s (0: as fast as possible)
	DurationS   float64   `json:"duration_s"` // wall time of the run
	Sent        int64     `json:"sent"`
	// Resent counts requests (load -retry) or batch lines (batch -retry)
	// sent again after a busy answer or none; Sent counts each once.
	Resent int64 `json:"resent"`
	// ResentAfter counts the resent by what they got before: "503_busy"
	// for a busy answer, a transport error's kind for none (null when
	// none was resent).
	ResentAfter map[string]int64 `json:"resent_after"`
	Received    int64            `json:"received"` // answers of any status
	OK          int64            `json:"ok"`       // verified answers
	Wrong       int64            `json:"wrong"`    // answers that do not solve their puzzle
	// Errors counts every error kind, wrong answers and 503s included.
	Errors map[string]int64 `json:"errors"`
	// Throughput is verified answers per second of DurationS.
	Throughput float64 `json:"throughput"`
	// Latency is over every received answer.
	Latency     Latency      `json:"latency_ms"`
	Percentiles []Percentile `json:"percentiles"`
	Timeline    []Tick       `json:"timeline"`
	// Failed is the span over which requests failed (null when none did):
	// a failover's error window, to the millisecond.
	Failed *Span `json:"failed"`
	// ScheduleLag (load and capacity only) is how late this process handed
	// each request on after its due time: its own scheduling delay, which
	// an open-loop latency includes. On a busy machine it shows how much of
	// the tail is the client's.
	ScheduleLag *Latency `json:"schedule_lag_ms"`

	Capacity *Capacity    `json:"capacity"`
	Stress   *StressStats `json:"stress"`
	Local    *LocalStats  `json:"local"`
}

// Span is when the first and the last of some requests finished, in
// milliseconds since the start of the run.
type Span struct {
	FirstMs float64 `json:"first_ms"`
	LastMs  float64 `json:"last_ms"`
}

// Latency holds percentiles in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Percentile is one point of the latency distribution.
type Percentile struct {
	Quantile float64 `json:"quantile"` // 0-100
	Ms       float64 `json:"ms"`
}

// ErrorCount is the sum of all error kinds.
func (r *Result) ErrorCount() int64 {
	var n int64
	for _, v := range r.Errors {
		n += v
	}
	return n
}

// ErrorRatio is the share of sent requests that failed in any way (0 when
// nothing was sent).
func (r *Result) ErrorRatio() float64 {
	if r.Sent == 0 {
		return 0
	}
	return float64(r.ErrorCount()) / float64(r.Sent)
}

// WriteJSON writes r as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes a readable summary of r.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "mode %s, target %s, %d connections", r.Mode, r.Target, r.Connections)
	if r.Rate > 0 {
		fmt.Fprintf(&b, ", rate %.0f/s", r.Rate)
	}
	fmt.Fprintf(&b, "\nduration  %.2fs\n", r.DurationS)
	fmt.Fprintf(&b, "sent      %d\nreceived  %d\nok        %d\nwrong     %d\n", r.Sent, r.Received, r.OK, r.Wrong)
	if r.Resent > 0 {
		fmt.Fprintf(&b, "resent    %d (after", r.Resent)
		for _, k := range errorKinds() {
			if n := r.ResentAfter[k.String()]; n > 0 {
				fmt.Fprintf(&b, " %s %d", k, n)
			}
		}
		b.WriteString(")\n")
	}
	fmt.Fprintf(&b, "rate      %.1f verified answers/s\n", r.Throughput)
	fmt.Fprintf(&b, "errors    %d", r.ErrorCount())
	for _, k := range errorKinds() {
		if n := r.Errors[k.String()]; n > 0 {
			fmt.Fprintf(&b, "  %s=%d", k, n)
		}
	}
	l := r.Latency
	fmt.Fprintf(&b, "\nlatency   p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  (mean %s)\n",
		ms(l.P50), ms(l.P90), ms(l.P99), ms(l.P999), ms(l.Max), ms(l.Mean))
	if s := r.ScheduleLag; s != nil {
		fmt.Fprintf(&b, "sched lag p50 %s  p99 %s  max %s  (this process's own delay in sending, part of the latency)\n",
			ms(s.P50), ms(s.P99), ms(s.Max))
	}
	if s := r.Local; s != nil {
		fmt.Fprintf(&b, "local     %d goroutines on %d cores: %.0f puzzles/s, %.0f puzzles/s per core\n",
			s.Workers, s.Cores, r.Throughput, s.PerCore)
	}
	if s := r.Stress; s != nil {
		fmt.Fprintf(&b, "stress    wrote %.0f requests/s, read %.0f answers/s, no-read %v, resent %d (the server closed their connection first)\n", s.SendRate, s.ReceiveRate, s.NoRead, s.Resent)
	}
	if c := r.Capacity; c != nil {
		fmt.Fprintf(&b, "capacity  steps (p99 objective %s):\n", ms(c.SLOms))
		for _, s := range c.Steps {
			verdict := "pass"
			if !s.Pass {
				verdict = "FAIL " + s.Why
			}
			fmt.Fprintf(&b, "  rate %8.0f/s  achieved %8.0f/s  p99 %s (own lag %s)  errors %.3f%%  %s\n",
				s.Rate, s.Achieved, ms(s.P99ms), ms(s.LagP99ms), 100*s.ErrorRatio, verdict)
		}
		fmt.Fprintf(&b, "capacity  %s\n", c.verdict())
		if c.Plan != nil {
			if err := c.Plan.WriteTable(&b); err != nil {
				return err
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// verdict is the capacity found, said as honestly as the search allows.
func (c *Capacity) verdict() string {
	if c.Rate == 0 {
		return fmt.Sprintf("none: p99 <= %s was not met at any rate tried (search ended: %s)", ms(c.SLOms), c.Stop)
	}
	var at, why string
	if c.AtLeast {
		at = "at least "
	}
	switch {
	case c.Stop == stopMaxRate:
		why = " (passed at -max-rate; the search went no higher)"
	case c.AtLeast && c.FailedRate > 0:
		why = fmt.Sprintf(" and below %.0f/s (search ended: %s)", c.FailedRate, c.Stop)
	case c.AtLeast:
		why = fmt.Sprintf(" (no step failed; search ended: %s)", c.Stop)
	case c.FailedRate > 0:
		why = fmt.Sprintf(" (%.0f/s failed)", c.FailedRate)
	}
	return fmt.Sprintf("%s%.0f requests/s at p99 <= %s%s; %d cores: %s%.0f requests/s per core",
		at, c.Rate, ms(c.SLOms), why, c.Cores, at, c.PerCore)
}

func ms(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0fms", v)
	case v >= 10:
		return fmt.Sprintf("%.1fms", v)
	}
	return fmt.Sprintf("%.3fms", v)
}
