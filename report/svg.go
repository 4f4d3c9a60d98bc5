package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// The timeline is drawn by hand as SVG: it is a Gantt chart of holds and
// leases with bands, which no plotting library draws, and its elements carry
// ids, classes and tooltips the page links to. The throughput and latency
// plots are gonum's (plots.go).

const (
	svgLabelW = 130.0
	svgPlotW  = 1050.0
	svgWidth  = svgLabelW + svgPlotW + 20
	svgAxis   = 22.0
)

// frame maps a time span onto the plot area, under a header that holds
// the fault labels in rows.
type frame struct {
	from, to int64
	rowH     float64
	rows     int
	top      float64 // where the lanes begin
	labels   []labelPlace
}

// newFrame lays out the fault labels of the span and the lanes under them.
func newFrame(m *model, from, to int64, rowH float64, rows int) frame {
	f := frame{from: from, to: to, rowH: rowH, rows: rows}
	var n int
	f.labels, n = placeFaultLabels(m, f)
	f.top = headerFor(n)
	return f
}

func (f frame) x(t int64) float64 {
	if f.to <= f.from {
		return svgLabelW
	}
	t = clamp(t, f.from, f.to)
	return svgLabelW + float64(t-f.from)/float64(f.to-f.from)*svgPlotW
}

func (f frame) y(row int) float64 { return f.top + float64(row)*f.rowH }
func (f frame) bottom() float64   { return f.y(f.rows) }
func (f frame) height() float64   { return f.bottom() + svgAxis }

// num formats an SVG coordinate compactly.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// secs renders a history time the way people read timelines.
func secs(ns int64) string { return strconv.FormatFloat(float64(ns)/1e9, 'f', 3, 64) + "s" }

func esc(s string) string { return html.EscapeString(s) }

func laneLabel(l *lane) string {
	if l.Sub == 0 {
		return fmt.Sprintf("client %d", l.Client)
	}
	// Two processes at most, so the label fits left of the lanes; the
	// lane's tooltip lists them all.
	ps := make([]string, 0, 3)
	for i, p := range l.Processes {
		if i == 2 {
			ps = append(ps, "…")
			break
		}
		ps = append(ps, "p"+strconv.Itoa(p))
	}
	return fmt.Sprintf("client %d · %s", l.Client, strings.Join(ps, ","))
}

func laneTitle(l *lane) string {
	if len(l.Processes) == 0 {
		return fmt.Sprintf("client %d", l.Client)
	}
	ps := make([]string, len(l.Processes))
	for i, p := range l.Processes {
		ps[i] = strconv.Itoa(p)
	}
	return fmt.Sprintf("client %d, processes %s", l.Client, strings.Join(ps, ", "))
}

// open starts an SVG of the frame with lane backgrounds and labels.
func (f frame) open(b *strings.Builder, class string, lanes []*lane) {
	fmt.Fprintf(b, `<svg class="%s" viewBox="0 0 %s %s" width="100%%" role="img">`, class, num(svgWidth), num(f.height()))
	for i, l := range lanes {
		fill := "#fafafa"
		if i%2 == 1 {
			fill = "#f0f0f0"
		}
		y := f.y(i)
		fmt.Fprintf(b, `<g class="lane" data-client="%d" data-sub="%d"><rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>`,
			l.Client, l.Sub, num(svgLabelW), num(y), num(svgPlotW), num(f.rowH), fill)
		fmt.Fprintf(b, `<text x="%s" y="%s" class="lane-label">%s<title>%s</title></text></g>`,
			num(svgLabelW-6), num(y+f.rowH/2+4), esc(laneLabel(l)), esc(laneTitle(l)))
	}
}

// axis draws time ticks under the lanes.
func (f frame) axis(b *strings.Builder) {
	span := float64(f.to-f.from) / 1e9
	if span <= 0 {
		return
	}
	step := niceStep(span / 8)
	y := f.bottom()
	fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" class="axis"/>`, num(svgLabelW), num(y), num(svgLabelW+svgPlotW), num(y))
	first := math.Ceil(float64(f.from)/1e9/step) * step
	for s := first; s <= float64(f.to)/1e9+1e-9; s += step {
		x := f.x(int64(math.Round(s * 1e9)))
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" class="tick"/><text x="%s" y="%s" class="tick-label">%s</text>`,
			num(x), num(f.top), num(x), num(y+4), num(x), num(y+16), strconv.FormatFloat(s, 'f', decimals(step), 64)+"s")
	}
}

func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func decimals(step float64) int {
	d := 0
	for step < 0.999 && d < 6 {
		step *= 10
		d++
	}
	return d
}

// bands draws every fault window and master switch in the frame, and the
// fault labels placed by newFrame, each linked to its row in the fault
// table (when the table lists it) and carrying its full text as tooltip.
func (f frame) bands(b *strings.Builder, m *model) {
	for i, w := range m.Faults {
		if w.End < f.from || w.Start > f.to {
			continue
		}
		x1, x2 := f.x(w.Start), f.x(w.End)
		fmt.Fprintf(b, `<g class="fault-band" data-fault="%d"><rect x="%s" y="0" width="%s" height="%s"><title>F%d %s: %s – %s</title></rect></g>`,
			i, num(x1), num(math.Max(x2-x1, 2)), num(f.bottom()), i+1, esc(faultLabel(w)), secs(w.Start), secs(w.End))
	}
	for _, l := range f.labels {
		w := m.Faults[l.fault]
		text := fmt.Sprintf(`<text x="%s" y="%s" class="fault-label" data-fault="%d">%s<title>F%d %s: %s – %s</title></text>`,
			num(l.x), num(labelBaseline(l.row)), l.fault, esc(l.text), l.fault+1, esc(faultLabel(w)), secs(w.Start), secs(w.End))
		if l.fault < maxFaultsShown {
			text = fmt.Sprintf(`<a href="#fault-%d">%s</a>`, l.fault+1, text)
		}
		b.WriteString(text)
	}
	for _, s := range m.Switches {
		if s.Time < f.from || s.Time > f.to {
			continue
		}
		x := f.x(s.Time)
		fmt.Fprintf(b, `<g class="switch"><line x1="%s" y1="0" x2="%s" y2="%s"/><title>master switch to %s at %s</title></g>`,
			num(x), num(x), num(f.bottom()), esc(s.Target), secs(s.Time))
	}
}

// detailSVG draws one window in full: leases, holds, refreshes, unknown
// outcomes, faults, switches and the anomalies in it.
func detailSVG(m *model, km *keyModel, w window) string {
	f := newFrame(m, w.From, w.To, 22, len(km.Lanes))
	var b strings.Builder
	f.open(&b, "timeline detail", km.Lanes)
	f.bands(&b, m)
	rowOf := map[int][]int{}
	for i, l := range km.Lanes {
		rowOf[l.Client] = append(rowOf[l.Client], i)
		y := f.y(i)
		for _, hd := range l.Holds {
			if hd.To < f.from || hd.LeaseFrom > f.to {
				continue
			}
			tip := fmt.Sprintf("client %d, process %d, lease %s: held %s – %s%s; lease %s – %s; history.jsonl lines %d, %d",
				hd.Client, hd.Process, hd.Lease, secs(hd.From), secs(hd.To), openText(hd.Open), secs(hd.LeaseFrom), secs(hd.LeaseTo), hd.AcquireLine, hd.ReleaseLine)
			lx1, lx2 := f.x(hd.LeaseFrom), f.x(hd.LeaseTo)
			fmt.Fprintf(&b, `<g class="hold-group"><title>%s</title><rect class="lease" x="%s" y="%s" width="%s" height="%s"/>`,
				esc(tip), num(lx1), num(y+3), num(math.Max(lx2-lx1, 1)), num(f.rowH-6))
			hx1, hx2 := f.x(hd.From), f.x(hd.To)
			fmt.Fprintf(&b, `<rect class="hold" x="%s" y="%s" width="%s" height="%s"/>`, num(hx1), num(y+7), num(math.Max(hx2-hx1, 1.5)), num(f.rowH-14))
			if hd.To > hd.LeaseTo {
				ox := f.x(max(hd.LeaseTo, hd.From))
				fmt.Fprintf(&b, `<rect class="outlived" x="%s" y="%s" width="%s" height="%s"/>`, num(ox), num(y+7), num(math.Max(hx2-ox, 1.5)), num(f.rowH-14))
			}
			for _, r := range hd.Refreshes {
				if r >= f.from && r <= f.to {
					fmt.Fprintf(&b, `<line class="refresh" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(f.x(r)), num(y+2), num(f.x(r)), num(y+f.rowH-2))
				}
			}
			b.WriteString(`</g>`)
		}
		for _, mk := range l.Marks {
			if mk.Ret < f.from || mk.Call > f.to {
				continue
			}
			x1, x2 := f.x(mk.Call), f.x(mk.Ret)
			fmt.Fprintf(&b, `<g class="unknown"><title>%s by process %d of unknown outcome: called %s, gave up %s (history.jsonl line %d)</title><rect x="%s" y="%s" width="%s" height="%s"/><text x="%s" y="%s">?</text></g>`,
				mk.Op, mk.Process, secs(mk.Call), secs(mk.Ret), mk.Line, num(x1), num(y+2), num(math.Max(x2-x1, 4)), num(f.rowH-4), num(x1+1), num(y+f.rowH/2+4))
		}
	}
	labelEnd := math.Inf(-1)
	for _, n := range w.Anomalies {
		a := m.Anomalies[n-1]
		rows := []int{}
		for _, c := range a.Clients {
			rows = append(rows, rowOf[c]...)
		}
		if len(rows) == 0 {
			for i := range km.Lanes {
				rows = append(rows, i)
			}
		}
		x1, x2 := f.x(a.StartNS), f.x(a.EndNS)
		if x2-x1 < 4 {
			x1, x2 = x1-2, x1+2
		}
		fmt.Fprintf(&b, `<g class="anomaly" id="t-anomaly-%d" data-n="%d"><title>#%d %s: %s</title>`, n, n, n, esc(kindText(a.Kind, a.Class)), esc(a.Detail))
		top := f.bottom()
		for _, r := range rows {
			y := f.y(r)
			top = math.Min(top, y)
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s"/>`, num(x1), num(y+1), num(x2-x1), num(f.rowH-2))
		}
		// Labels of anomalies that crowd one another are left to the
		// tooltip and to the list under the drawing.
		label := "#" + strconv.Itoa(n)
		if lx := x1 + 2; lx >= labelEnd+4 {
			labelEnd = lx + textWidth(label, anomalyFontPx, true)
			fmt.Fprintf(&b, `<a href="#anomaly-%d"><text x="%s" y="%s" class="anomaly-label">#%d</text></a>`, n, num(x1+2), num(top-2), n)
		}
		b.WriteString(`</g>`)
	}
	f.axis(&b)
	b.WriteString(`</svg>`)
	return b.String()
}

func openText(open bool) string {
	if open {
		return " (never released)"
	}
	return ""
}

// overviewBuckets is how many columns the overview of a busy key has.
const (
	overviewBuckets = 525
	// maxExactOverview: up to this many holds the overview draws each one.
	maxExactOverview = 1500
	maxOverviewMarks = 300
)

// overviewSVG draws the whole run of a key: each hold when there are few,
// else per lane the share of time held in each column; the detail windows
// are outlined and link to their drawing, anomalies are marked and link to
// theirs.
func overviewSVG(m *model, km *keyModel, ws []window) string {
	f := newFrame(m, 0, max(m.End, 1), 14, len(km.Lanes))
	var b strings.Builder
	f.open(&b, "timeline overview", km.Lanes)
	f.bands(&b, m)
	exact := km.Holds <= maxExactOverview
	for i, l := range km.Lanes {
		y := f.y(i)
		if exact {
			for _, hd := range l.Holds {
				x1, x2 := f.x(hd.From), f.x(hd.To)
				fmt.Fprintf(&b, `<rect class="hold" x="%s" y="%s" width="%s" height="%s"/>`, num(x1), num(y+3), num(math.Max(x2-x1, 1)), num(f.rowH-6))
			}
			continue
		}
		// Held share per column, quantized to five levels and run-length merged.
		cover := l.cover
		if cover == nil {
			cover = make([]float64, overviewBuckets)
			for _, hd := range l.Holds {
				addCover(cover, hd.From, hd.To, f.to)
			}
		}
		level := func(v float64) int { return int(math.Ceil(math.Min(v, 1) * 4)) }
		for c := 0; c < overviewBuckets; {
			lv := level(cover[c])
			e := c + 1
			for e < overviewBuckets && level(cover[e]) == lv {
				e++
			}
			if lv > 0 {
				x1 := svgLabelW + float64(c)*svgPlotW/overviewBuckets
				fmt.Fprintf(&b, `<rect class="hold density" x="%s" y="%s" width="%s" height="%s" opacity="%s"/>`,
					num(x1), num(y+3), num(float64(e-c)*svgPlotW/overviewBuckets), num(f.rowH-6), strconv.FormatFloat(float64(lv)/4, 'f', 2, 64))
			}
			c = e
		}
	}
	for _, w := range ws {
		x1, x2 := f.x(w.From), f.x(w.To)
		fmt.Fprintf(&b, `<a href="#%s"><rect class="window-outline" x="%s" y="%s" width="%s" height="%s"><title>%s – %s: %s</title></rect></a>`,
			w.ID, num(x1-1), num(f.top), num(math.Max(x2-x1, 1)+2), num(f.bottom()-f.top), secs(w.From), secs(w.To), esc(w.Title(m)))
	}
	marks := 0
	for _, a := range m.Anomalies {
		if a.Key != km.Key || marks == maxOverviewMarks {
			continue
		}
		marks++
		target := fmt.Sprintf("#anomaly-%d", a.N)
		if windowOf(ws, a.N) != nil {
			target = fmt.Sprintf("#t-anomaly-%d", a.N)
		}
		x := f.x(a.StartNS)
		fmt.Fprintf(&b, `<a href="%s"><g class="anomaly-mark" data-n="%d"><title>#%d %s at %s</title><line x1="%s" y1="%s" x2="%s" y2="%s"/><path d="M%s %sl-4 -7h8z"/></g></a>`,
			target, a.N, a.N, esc(kindText(a.Kind, a.Class)), secs(a.StartNS), num(x), num(f.top), num(x), num(f.bottom()), num(x), num(f.top))
	}
	f.axis(&b)
	b.WriteString(`</svg>`)
	return b.String()
}
