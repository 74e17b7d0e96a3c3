package load

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// A tiny SVG line-chart writer for the HTML report: the report must not
// fetch anything when it is viewed, so there is no charting library.

type point struct{ X, Y float64 }

type series struct {
	Name   string
	Color  string
	Points []point
	Dots   bool // draw markers (and no line)
	Dash   bool // draw a thin dashed line
}

type tick struct {
	V     float64
	Label string
}

type axis struct {
	Label string
	Log   bool   // log10 scale; values <= 0 are clamped to the lowest tick
	Ticks []tick // fixed ticks; nil: computed
}

type hline struct {
	Y     float64
	Label string
	Color string
}

const (
	chartW, chartH             = 760, 320
	padL, padR, padT, padB     = 64, 150, 34, 46
	plotW, plotH               = chartW - padL - padR, chartH - padT - padB
	fontAttrs                  = `font-family="sans-serif" font-size="12"`
	gridColor, axisColor, text = "#e3e3e3", "#555", "#222"
)

// chart renders series as an SVG line chart with a legend on the right.
func chart(title string, xa, ya axis, ss []series, hs []hline) string {
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, p := range s.Points {
			xmin, xmax = math.Min(xmin, p.X), math.Max(xmax, p.X)
			if !ya.Log || p.Y > 0 {
				ymin, ymax = math.Min(ymin, p.Y), math.Max(ymax, p.Y)
			}
		}
	}
	for _, h := range hs {
		ymin, ymax = math.Min(ymin, h.Y), math.Max(ymax, h.Y)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img">`, chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<text x="%d" y="20" %s font-size="15" font-weight="bold" fill="%s">%s</text>`, padL, fontAttrs, text, html.EscapeString(title))
	if math.IsInf(xmin, 1) || math.IsInf(ymin, 1) {
		fmt.Fprintf(&b, `<text x="%d" y="%d" %s fill="%s">no data</text></svg>`, padL+20, padT+plotH/2, fontAttrs, text)
		return b.String()
	}
	xs := newScale(xa, xmin, xmax, padL, padL+plotW)
	ys := newScale(ya, ymin, ymax, padT+plotH, padT)

	// Grid, ticks and axis labels.
	for _, t := range xs.ticks {
		x := xs.pos(t.V)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`, x, padT, x, padT+plotH, gridColor)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" %s fill="%s" text-anchor="middle">%s</text>`, x, padT+plotH+16, fontAttrs, text, html.EscapeString(t.Label))
	}
	for _, t := range ys.ticks {
		y := ys.pos(t.V)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`, padL, y, padL+plotW, y, gridColor)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" %s fill="%s" text-anchor="end">%s</text>`, padL-6, y+4, fontAttrs, text, html.EscapeString(t.Label))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="%s"/>`, padL, padT, plotW, plotH, axisColor)
	fmt.Fprintf(&b, `<text x="%d" y="%d" %s fill="%s" text-anchor="middle">%s</text>`, padL+plotW/2, chartH-8, fontAttrs, text, html.EscapeString(xa.Label))
	fmt.Fprintf(&b, `<text transform="translate(14 %d) rotate(-90)" %s fill="%s" text-anchor="middle">%s</text>`, padT+plotH/2, fontAttrs, text, html.EscapeString(ya.Label))

	for _, h := range hs {
		y := ys.pos(h.Y)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-dasharray="6 4" stroke-width="1.5"/>`, padL, y, padL+plotW, y, h.Color)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" %s fill="%s">%s</text>`, padL+4, y-4, fontAttrs, h.Color, html.EscapeString(h.Label))
	}
	for i, s := range ss {
		if s.Dots {
			for _, p := range s.Points {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`, xs.pos(p.X), ys.pos(p.Y), s.Color)
			}
		} else if len(s.Points) > 0 {
			style := `stroke-width="2"`
			if s.Dash {
				style = `stroke-width="1.2" stroke-dasharray="5 3"`
			}
			b.WriteString(`<polyline fill="none" ` + style + ` stroke="` + s.Color + `" points="`)
			for _, p := range s.Points {
				fmt.Fprintf(&b, "%.1f,%.1f ", xs.pos(p.X), ys.pos(p.Y))
			}
			b.WriteString(`"/>`)
		}
		ly := padT + 10 + 20*i
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="4" fill="%s"/>`, padL+plotW+14, ly-2, s.Color)
		fmt.Fprintf(&b, `<text x="%d" y="%d" %s fill="%s">%s</text>`, padL+plotW+34, ly+4, fontAttrs, text, html.EscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

type scale struct {
	log      bool
	lo, hi   float64 // data range, in log10 when log
	from, to float64 // pixels
	ticks    []tick
}

func newScale(a axis, lo, hi float64, from, to int) scale {
	s := scale{log: a.Log, from: float64(from), to: float64(to), ticks: a.Ticks}
	if a.Log {
		lo = math.Pow(10, math.Floor(math.Log10(math.Max(lo, 1e-3))))
		hi = math.Pow(10, math.Ceil(math.Log10(math.Max(hi, lo*10))))
		if s.ticks == nil {
			for v := lo; v <= hi*1.0001; v *= 10 {
				s.ticks = append(s.ticks, tick{v, num(v)})
			}
		}
		s.lo, s.hi = math.Log10(lo), math.Log10(hi)
	} else {
		if s.ticks == nil {
			lo, hi, s.ticks = niceTicks(math.Min(lo, 0), hi)
		} else {
			for _, t := range s.ticks {
				lo, hi = math.Min(lo, t.V), math.Max(hi, t.V)
			}
		}
		if hi <= lo {
			hi = lo + 1
		}
		s.lo, s.hi = lo, hi
	}
	return s
}

func (s scale) pos(v float64) float64 {
	if s.log {
		v = math.Log10(math.Max(v, math.Pow(10, s.lo)))
	}
	return s.from + (v-s.lo)/(s.hi-s.lo)*(s.to-s.from)
}

// niceTicks returns a range covering lo..hi and about six round ticks.
func niceTicks(lo, hi float64) (float64, float64, []tick) {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	lo = math.Floor(lo/step) * step
	hi = math.Ceil(hi/step) * step
	var ts []tick
	for v := lo; v <= hi+step/2; v += step {
		ts = append(ts, tick{v, num(v)})
	}
	return lo, hi, ts
}

func num(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%gk", v/1e3)
	case a >= 1:
		return fmt.Sprintf("%g", math.Round(v*100)/100)
	}
	return fmt.Sprintf("%g", v)
}
