package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// panel is one chart: a metric of every variant against utilisation.
type panel struct {
	title string
	value func(Stats) float64
}

var panels = []panel{
	{"p50 latency (ms, log)", func(s Stats) float64 { return s.P50.Seconds() * 1000 }},
	{"p99 latency (ms, log)", func(s Stats) float64 { return s.P99.Seconds() * 1000 }},
	{"most requests at one server (log)", func(s Stats) float64 { return float64(s.MaxQueue) }},
}

// colours holds one colour per variant, in the order variants lists them.
var colours = []string{"#777777", "#b8860b", "#08519c", "#2ca02c", "#6baed6", "#9ecae1", "#a50f15", "#9467bd", "#ef6548", "#fdae6b"}

const (
	panelW, panelH = 320, 220
	marginL        = 50
	marginT        = 40
	legendW        = 190
)

// writeSVG draws one row of panels per shape, log-scaled on y, with a
// legend on the right.
func writeSVG(w io.Writer, grids []grid) {
	width := marginL + len(panels)*(panelW+marginL) + legendW
	height := len(grids)*(panelH+2*marginT) + marginT
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	for gi, g := range grids {
		top := marginT + gi*(panelH+2*marginT)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", marginL, top-16, html.EscapeString(g.shape.String()))
		for pi, p := range panels {
			left := marginL + pi*(panelW+marginL)
			drawPanel(&b, g, p, left, top)
		}
		if gi == 0 {
			lx := marginL + len(panels)*(panelW+marginL)
			for vi, v := range g.variants {
				y := top + 14 + vi*18
				fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"/>`+"\n", lx, y-4, lx+22, y-4, colours[vi%len(colours)])
				fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+28, y, html.EscapeString(v.String()))
			}
		}
	}
	b.WriteString("</svg>\n")
	io.WriteString(w, b.String())
}

func drawPanel(b *strings.Builder, g grid, p panel, left, top int) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range g.stats {
		for _, st := range row {
			if v := p.value(st); v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	lo, hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	if hi <= lo {
		hi = lo * 10
	}
	umin, umax := g.utils[0], g.utils[len(g.utils)-1]
	if umax <= umin {
		umin, umax = umin-0.05, umax+0.05
	}
	x := func(u float64) float64 { return float64(left) + (u-umin)/(umax-umin)*panelW }
	y := func(v float64) float64 {
		return float64(top+panelH) - (math.Log10(math.Max(v, lo))-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*panelH
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", left, top-4, html.EscapeString(p.title))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", left, top, panelW, panelH)
	for d := lo; d <= hi*1.0001; d *= 10 {
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y(d), left+panelW, y(d))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-4, y(d)+4, tick(d))
	}
	for _, u := range g.utils {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%g%%</text>`+"\n", x(u), top+panelH+14, u*100)
	}
	for vi, row := range g.stats {
		var pts []string
		for ui, st := range row {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(g.utils[ui]), y(p.value(st))))
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), colours[vi%len(colours)])
	}
}

func tick(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%g", v)
}
