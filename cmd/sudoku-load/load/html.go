package load

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"time"
)

// WriteHTML writes r as a self-contained HTML page: a summary table, latency
// over time, throughput over time, the latency percentile distribution and,
// for a capacity search, p99 against rate. The plots are inline SVG; the page
// fetches nothing when it is viewed.
func (r *Result) WriteHTML(w io.Writer, title string, generated time.Time) error {
	data := struct {
		Title     string
		Generated string
		R         *Result
		Kinds     []Kind
		Charts    []template.HTML
		Note      string
	}{Title: title, Generated: generated.UTC().Format(time.RFC3339), R: r, Kinds: errorKinds(), Note: latencyNotes[r.Mode]}
	for _, c := range r.charts() {
		data.Charts = append(data.Charts, template.HTML(c)) //nolint:gosec // built by chart, which escapes every text
	}
	return reportTmpl.Execute(w, data)
}

func (r *Result) charts() []string {
	var cs []string
	if len(r.Timeline) > 0 {
		var p50, p99, mx, lag, sent, recv, errs []point
		lo, hi := math.Inf(1), 0.0
		for _, t := range r.Timeline {
			x := float64(t.Second)
			if t.Received > 0 {
				p50 = append(p50, point{x, t.P50ms})
				p99 = append(p99, point{x, t.P99ms})
				mx = append(mx, point{x, t.MaxMs})
				if r.ScheduleLag != nil {
					lag = append(lag, point{x, t.LagP99ms})
				}
				lo, hi = math.Min(lo, t.P50ms), math.Max(hi, t.MaxMs)
			}
			sent = append(sent, point{x, float64(t.Sent)})
			recv = append(recv, point{x, float64(t.Received)})
			errs = append(errs, point{x, float64(t.Errors)})
		}
		ya := axis{Label: "latency (ms)", Log: hi > 20*lo}
		var hs []hline
		if r.Capacity != nil {
			hs = append(hs, hline{r.Capacity.SLOms, "p99 objective", "#b00"})
		}
		cs = append(cs, chart("Latency over time (per second)", axis{Label: "second of the run"}, ya,
			[]series{{Name: "max", Color: "#d62728", Points: mx, Dash: true}, {Name: "p99", Color: "#ff7f0e", Points: p99},
				{Name: "p50", Color: "#1f77b4", Points: p50}, {Name: "own lag p99", Color: "#7f7f7f", Points: lag, Dash: true}}, hs))
		cs = append(cs, chart("Requests per second", axis{Label: "second of the run"}, axis{Label: "requests"},
			[]series{{Name: "sent", Color: "#2ca02c", Points: sent}, {Name: "received", Color: "#1f77b4", Points: recv},
				{Name: "errors", Color: "#d62728", Points: errs}}, nil))
	}
	if len(r.Percentiles) > 0 {
		// x = log10(1/(1-q)): 90% -> 1, 99% -> 2, 99.9% -> 3 (HdrHistogram's plot).
		var pts []point
		lo, hi := math.Inf(1), 0.0
		top := 5.0
		for _, p := range r.Percentiles {
			x := top
			if p.Quantile < 100 {
				x = math.Min(top, math.Log10(100/(100-p.Quantile)))
			}
			pts = append(pts, point{x, p.Ms})
			if p.Ms > 0 {
				lo, hi = math.Min(lo, p.Ms), math.Max(hi, p.Ms)
			}
		}
		xt := []tick{{0, "0%"}, {1, "90%"}, {2, "99%"}, {3, "99.9%"}, {4, "99.99%"}, {5, "max"}}
		cs = append(cs, chart("Latency by percentile", axis{Label: "percentile", Ticks: xt},
			axis{Label: "latency (ms)", Log: hi > 20*lo}, []series{{Name: "latency", Color: "#9467bd", Points: pts}}, nil))
	}
	if c := r.Capacity; c != nil && len(c.Steps) > 0 {
		var pass, fail []point
		for _, s := range c.Steps {
			if s.Pass {
				pass = append(pass, point{s.Rate, s.P99ms})
			} else {
				fail = append(fail, point{s.Rate, s.P99ms})
			}
		}
		cs = append(cs, chart("Capacity search: p99 by rate", axis{Label: "requests/s"}, axis{Label: "p99 (ms)", Log: true},
			[]series{{Name: "pass", Color: "#2ca02c", Points: pass, Dots: true}, {Name: "fail", Color: "#d62728", Points: fail, Dots: true}},
			[]hline{{c.SLOms, fmt.Sprintf("objective %gms", c.SLOms), "#b00"}}))
	}
	return cs
}

var latencyNotes = map[string]string{
	"load":     "Latency runs from each request's scheduled send time (open loop, no coordinated omission).",
	"capacity": "Each step is an open-loop load run; latency runs from each request's scheduled send time.",
	"batch":    "Latency runs from each request's send (closed loop); a POST's lines share the POST's latency.",
	"stress":   "Latency runs from the moment a request was queued for writing on its pipelined connection.",
	"local":    "Latency is the in-process solve time of one puzzle, answer check excluded.",
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"f1":   func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"f3":   func(v float64) string { return fmt.Sprintf("%.3f", v) },
	"errs": func(r *Result, k Kind) int64 { return r.Errors[k.String()] },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font-family:sans-serif;margin:24px;color:#222;max-width:980px}
table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;padding:3px 10px;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}.fail{color:#b00}
</style></head><body>
<h1>{{.Title}}</h1>
<p>mode <b>{{.R.Mode}}</b>, target <code>{{.R.Target}}</code>, {{.R.Connections}} connections{{if gt .R.Rate 0.0}}, rate {{f1 .R.Rate}}/s{{end}}, {{f1 .R.DurationS}} s; generated {{.Generated}}</p>
<table>
<tr><th>sent</th><th>received</th><th>ok</th><th>wrong</th><th>errors</th><th>verified answers/s</th></tr>
<tr><td>{{.R.Sent}}</td><td>{{.R.Received}}</td><td>{{.R.OK}}</td><td>{{.R.Wrong}}</td><td>{{.R.ErrorCount}}</td><td>{{f1 .R.Throughput}}</td></tr>
</table>
<table><tr>{{range .Kinds}}<th>{{.}}</th>{{end}}</tr><tr>{{range .Kinds}}<td>{{errs $.R .}}</td>{{end}}</tr></table>
<table><tr><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>mean</th></tr>
<tr><td>{{f3 .R.Latency.P50}} ms</td><td>{{f3 .R.Latency.P90}} ms</td><td>{{f3 .R.Latency.P99}} ms</td><td>{{f3 .R.Latency.P999}} ms</td><td>{{f3 .R.Latency.Max}} ms</td><td>{{f3 .R.Latency.Mean}} ms</td></tr></table>
{{with .R.ScheduleLag}}<p>Client schedule lag (how late this process sent requests after their due time; part of every latency above): p50 {{f3 .P50}} ms, p99 {{f3 .P99}} ms, max {{f3 .Max}} ms.</p>{{end}}
{{with .R.Capacity}}<p>Capacity at p99 &le; {{f3 .SLOms}} ms: <b>{{if .AtLeast}}at least {{end}}{{f1 .Rate}} requests/s</b> on {{.Cores}} cores, <b>{{f1 .PerCore}} per core</b>{{with .Plan}}; a peak of {{f1 .Peak}}/s needs {{.Cores}} cores at {{f1 .Utilisation}} of each, {{.Machines}} machines of {{.MachineCores}} with {{.Spare}} spare{{end}}.</p>
<table><tr><th>rate</th><th>achieved</th><th>p50 ms</th><th>p99 ms</th><th>own lag p99 ms</th><th>errors</th><th class="l">verdict</th></tr>
{{range .Steps}}<tr><td>{{f1 .Rate}}</td><td>{{f1 .Achieved}}</td><td>{{f3 .P50ms}}</td><td>{{f3 .P99ms}}</td><td>{{f3 .LagP99ms}}</td><td>{{f3 .ErrorRatio}}</td><td class="l{{if not .Pass}} fail{{end}}">{{if .Pass}}pass{{else}}{{.Why}}{{end}}</td></tr>
{{end}}</table>{{end}}
{{with .R.Local}}<p>{{.Workers}} goroutines on {{.Cores}} cores: {{f1 .PerCore}} puzzles/s per core (solver limit {{.Limit}}).</p>{{end}}
{{with .R.Stress}}<p>stress: wrote {{f1 .SendRate}} requests/s, read {{f1 .ReceiveRate}} answers/s{{if .NoRead}} (never reading){{end}}{{if .Resent}}, wrote {{.Resent}} again on a new connection (the server closed theirs first){{end}}.</p>{{end}}
{{range .Charts}}<div>{{.}}</div>
{{end}}
<p style="color:#777;font-size:12px">{{.Note}} Latencies are recorded in an HDR histogram (1 us to 10 min, 3 significant digits); answers are checked against their puzzles.</p>
</body></html>
`))
