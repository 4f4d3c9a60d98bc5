package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/locktorture/locktorture/history"
)

// plotBuckets is how many points each series of the rate and latency plots
// has, whatever the length of the run.
const plotBuckets = 120

// series are the per-bucket figures of the plots.
type series struct {
	width                     float64 // seconds per bucket
	ok, failed, unknown, ops  plotter.XYs
	p50, p99, maxLat          plotter.XYs
	anyLatency, anyFailureRow bool
}

// seriesBuilder buckets, one event at a time, what the plots need of each
// completed operation: the history's end is known from the first pass, so
// each bucket keeps its counts and at most latencySamples latencies (a
// uniform sample beyond that, and the exact maximum), whatever the length
// of the run.
type seriesBuilder struct {
	bw                    float64 // ns per bucket
	calls                 map[int64]callInfo
	okN, failN, unkN, ops [plotBuckets]float64
	lat                   [plotBuckets]latencies
	rng                   uint64 // the sample's deterministic draws
}

type callInfo struct {
	time    int64
	acquire bool
}

// latencySamples bounds the latencies one bucket keeps for its quantiles:
// exact up to this many acquires, a uniform sample of this size beyond.
const latencySamples = 4096

// latencies are one bucket's sample of ok acquires' latencies (ms).
type latencies struct {
	seen   int
	max    float64
	sample []float64
}

func newSeriesBuilder(end int64) *seriesBuilder {
	return &seriesBuilder{bw: float64(max(end, 1)) / plotBuckets, calls: map[int64]callInfo{}, rng: 0x9e3779b97f4a7c15}
}

func (s *seriesBuilder) bucket(t int64) int { return max(0, min(int(float64(t)/s.bw), plotBuckets-1)) }

func (s *seriesBuilder) add(e history.Event) {
	switch {
	case e.Type == history.Invoke:
		s.calls[e.ID] = callInfo{time: e.Time, acquire: e.Op == history.Acquire}
	case e.Type.IsCompletion():
		inv, ok := s.calls[e.ID]
		if !ok {
			return
		}
		delete(s.calls, e.ID)
		b := s.bucket(e.Time)
		s.ops[b]++
		if !inv.acquire {
			return
		}
		switch e.Type {
		case history.OK:
			s.okN[b]++
			s.sampleLatency(&s.lat[b], float64(e.Time-inv.time)/1e6)
		case history.Fail:
			s.failN[b]++
		default:
			s.unkN[b]++
		}
	}
}

// sampleLatency keeps v in l's reservoir: every value while there is room,
// then each with the chance that keeps the sample uniform.
func (s *seriesBuilder) sampleLatency(l *latencies, v float64) {
	l.seen++
	l.max = math.Max(l.max, v)
	if len(l.sample) < latencySamples {
		l.sample = append(l.sample, v)
		return
	}
	s.rng ^= s.rng << 13
	s.rng ^= s.rng >> 7
	s.rng ^= s.rng << 17
	if j := s.rng % uint64(l.seen); j < latencySamples {
		l.sample[j] = v
	}
}

// build returns the plots' series.
func (sb *seriesBuilder) build() *series {
	s := &series{width: sb.bw / 1e9}
	for b := 0; b < plotBuckets; b++ {
		x := (float64(b) + 0.5) * s.width
		s.ok = append(s.ok, plotter.XY{X: x, Y: sb.okN[b] / s.width})
		s.failed = append(s.failed, plotter.XY{X: x, Y: sb.failN[b] / s.width})
		s.unknown = append(s.unknown, plotter.XY{X: x, Y: sb.unkN[b] / s.width})
		s.ops = append(s.ops, plotter.XY{X: x, Y: sb.ops[b] / s.width})
		if sb.failN[b]+sb.unkN[b] > 0 {
			s.anyFailureRow = true
		}
		l := sb.lat[b]
		if l.seen == 0 {
			continue
		}
		sort.Float64s(l.sample)
		s.anyLatency = true
		s.p50 = append(s.p50, plotter.XY{X: x, Y: quantile(l.sample, 0.5)})
		s.p99 = append(s.p99, plotter.XY{X: x, Y: quantile(l.sample, 0.99)})
		s.maxLat = append(s.maxLat, plotter.XY{X: x, Y: l.max})
	}
	return s
}

// quantile of sorted values, nearest rank.
func quantile(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// The plots are drawn to be read with the timeline above them: the same
// width, the data area exactly under the timeline's lanes (x from svgLabelW
// to svgLabelW+svgPlotW in the same seconds, ticked the same way), the
// page's sans-serif font (gonum lays text out with Liberation Sans metrics;
// the page renders it in its own font), the legend in HTML above the
// drawing rather than over the data, and Okabe–Ito colours, which stay
// apart for colour-blind readers, as on the timeline.

// Okabe–Ito colours, shared with the timeline's CSS (template.go).
var (
	okBlue      = color.NRGBA{R: 0x00, G: 0x72, B: 0xb2, A: 255}
	okOrange    = color.NRGBA{R: 0xe6, G: 0x9f, B: 0x00, A: 255}
	okVermilion = color.NRGBA{R: 0xd5, G: 0x5e, B: 0x00, A: 255}
	okPurple    = color.NRGBA{R: 0xcc, G: 0x79, B: 0xa7, A: 255}
	okGreen     = color.NRGBA{R: 0x00, G: 0x9e, B: 0x73, A: 255}
	okGrey      = color.NRGBA{R: 0x55, G: 0x55, B: 0x55, A: 255}
	bandColor   = color.NRGBA{R: 0xf0, G: 0xe4, B: 0x42, A: 110}
)

// plotH is the height of a plot in the same units as the timeline's width.
const plotH = 230.0

// faultBands is a gonum plotter that shades the fault windows over the
// whole height of a plot, so rates and latencies line up with the faults
// the way they do on the timeline.
type faultBands struct {
	windows  []history.Window
	switches []int64
}

func (fb faultBands) Plot(c draw.Canvas, plt *plot.Plot) {
	x, _ := plt.Transforms(&c)
	for _, w := range fb.windows {
		x1, x2 := x(float64(w.Start)/1e9), x(float64(w.End)/1e9)
		if x2-x1 < 1 {
			x2 = x1 + 1
		}
		pts := []vg.Point{{X: x1, Y: c.Min.Y}, {X: x2, Y: c.Min.Y}, {X: x2, Y: c.Max.Y}, {X: x1, Y: c.Max.Y}}
		c.FillPolygon(bandColor, c.ClipPolygonX(pts))
	}
	sty := draw.LineStyle{Color: okGreen, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
	for _, t := range fb.switches {
		xs := x(float64(t) / 1e9)
		if xs >= c.Min.X && xs <= c.Max.X {
			c.StrokeLine2(sty, xs, c.Min.Y, xs, c.Max.Y)
		}
	}
}

type namedXYs struct {
	name  string
	xys   plotter.XYs
	color color.NRGBA
	dash  bool
}

// plotView is one plot as the page shows it: a title, its legend in HTML,
// and the drawing.
type plotView struct {
	ID, Title string
	Legend    []legendItem
	SVG       template.HTML
}

// legendItem is one entry of a plot's legend: a swatch in CSS and a name.
type legendItem struct {
	Name  string
	Style template.CSS
}

func lineSwatch(c color.NRGBA, dash bool) template.CSS {
	kind := "solid"
	if dash {
		kind = "dashed"
	}
	return template.CSS(fmt.Sprintf("height:0;border-top:2px %s #%02x%02x%02x", kind, c.R, c.G, c.B))
}

// timeTicks ticks seconds the way the timeline's axis does (frame.axis).
func timeTicks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return nil
	}
	step := niceStep((hi - lo) / 8)
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+1e-9; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals(step), 64) + "s"})
	}
	return ts
}

// valueStep is the tick step of a value axis up to hi: four or five ticks.
func valueStep(hi float64) float64 {
	if hi <= 0 {
		return 1
	}
	return niceStep(hi / 4)
}

// valueTicks ticks a value axis in plain numbers of its unit: 250, not 250.00.
func valueTicks(lo, hi float64) []plot.Tick {
	step := valueStep(hi)
	var ts []plot.Tick
	for v := 0.0; v <= hi+step*1e-6; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals(step), 64)})
	}
	return ts
}

// linePlot draws named series over the fault bands and returns the plot
// for the page.
func linePlot(id, title, unit string, end int64, fb faultBands, lines []namedXYs) (plotView, error) {
	pv := plotView{ID: id, Title: title}
	p := plot.New()
	sans := font.Font{Typeface: "Liberation", Variant: "Sans"}
	for _, st := range []*font.Font{&p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font, &p.X.Tick.Label.Font, &p.Y.Tick.Label.Font} {
		st.Typeface, st.Variant, st.Size = sans.Typeface, sans.Variant, vg.Points(10)
	}
	p.Y.Label.Text = unit
	p.X.Padding, p.Y.Padding = 0, 0
	p.X.Tick.Marker = plot.TickerFunc(timeTicks)
	p.Y.Tick.Marker = plot.TickerFunc(valueTicks)
	p.Add(plotter.NewGrid())
	p.Add(fb)
	if len(fb.windows) > 0 {
		pv.Legend = append(pv.Legend, legendItem{"fault active", template.CSS("background:rgba(240,228,66,.5)")})
	}
	if len(fb.switches) > 0 {
		pv.Legend = append(pv.Legend, legendItem{"master switch", template.CSS("height:10px;width:0;border-left:2px dashed #009e73")})
	}
	for _, l := range lines {
		if len(l.xys) == 0 {
			continue
		}
		for _, seg := range segments(l.xys, 1.5*float64(end)/1e9/plotBuckets) {
			if len(seg) == 1 {
				// A lone column draws no line: a dot shows its value.
				sc, err := plotter.NewScatter(seg)
				if err != nil {
					return pv, fmt.Errorf("plot %s: %w", l.name, err)
				}
				sc.GlyphStyle = draw.GlyphStyle{Color: l.color, Radius: vg.Points(1.6), Shape: draw.CircleGlyph{}}
				p.Add(sc)
				continue
			}
			ln, err := plotter.NewLine(seg)
			if err != nil {
				return pv, fmt.Errorf("plot %s: %w", l.name, err)
			}
			ln.Color = l.color
			ln.Width = vg.Points(1.4)
			if l.dash {
				ln.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			}
			p.Add(ln)
		}
		pv.Legend = append(pv.Legend, legendItem{l.name, lineSwatch(l.color, l.dash)})
	}
	// The run's whole length, as on the timeline (the bands are not data);
	// the top at a tick.
	p.X.Min, p.X.Max = 0, math.Max(float64(end)/1e9, 1e-3)
	p.Y.Min = 0
	step := valueStep(p.Y.Max)
	p.Y.Max = math.Max(step, math.Ceil(p.Y.Max/step-1e-9)*step)

	cv := vgsvg.New(vg.Length(svgWidth), vg.Length(plotH))
	dc := draw.New(cv)
	// Move the data area under the timeline's lanes.
	da := p.DataCanvas(dc)
	c := draw.Crop(dc, vg.Length(svgLabelW)-da.Min.X, vg.Length(svgLabelW+svgPlotW)-da.Max.X, 0, -4)
	p.Draw(c)
	area := p.DataCanvas(c)
	var buf bytes.Buffer
	if _, err := cv.WriteTo(&buf); err != nil {
		return pv, fmt.Errorf("render %s: %w", title, err)
	}
	pv.SVG = template.HTML(inlineSVG(buf.String(), id, area))
	return pv, nil
}

// segments cuts a series where columns without a value (no ok acquire
// there, hence no latency) leave a gap wider than maxGap, so that the line
// does not draw a latency through time when nothing was acquired.
func segments(xys plotter.XYs, maxGap float64) []plotter.XYs {
	var out []plotter.XYs
	from := 0
	for i := 1; i <= len(xys); i++ {
		if i == len(xys) || xys[i].X-xys[i-1].X > maxGap {
			out = append(out, xys[from:i])
			from = i
		}
	}
	return out
}

var svgOpen = regexp.MustCompile(`<svg[^>]*>`)

// inlineSVG makes gonum's SVG a part of the page: no XML prolog, as wide
// as the timeline and scaling with it, text in the page's font, and the
// data area marked (rect.plot-area) so that what lies on it can be found.
func inlineSVG(s, id string, area draw.Canvas) string {
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:]
	}
	s = svgOpen.ReplaceAllLiteralString(s, fmt.Sprintf(`<svg class="plot" id="%s" viewBox="0 0 %s %s" width="100%%" role="img">`,
		id, num(svgWidth), num(plotH)))
	s = strings.ReplaceAll(s, "font-family:Liberation Sans;", "")
	mark := fmt.Sprintf(`<rect class="plot-area" x="%s" y="%s" width="%s" height="%s" fill="none"/></svg>`,
		num(float64(area.Min.X)), num(plotH-float64(area.Max.Y)), num(float64(area.Max.X-area.Min.X)), num(float64(area.Max.Y-area.Min.Y)))
	if i := strings.LastIndex(s, "</svg>"); i >= 0 {
		s = s[:i] + mark + s[i+len("</svg>"):]
	}
	return s
}

// plots renders the throughput and the acquire-latency plots.
func plots(sb *seriesBuilder, m *model) ([]plotView, error) {
	s := sb.build()
	fb := faultBands{windows: m.Faults}
	for _, sw := range m.Switches {
		fb.switches = append(fb.switches, sw.Time)
	}
	thr, err := linePlot("plot-throughput", "Throughput", "ops/s", m.End, fb, []namedXYs{
		{"all operations", s.ops, okGrey, true},
		{"acquires ok", s.ok, okBlue, false},
		{"acquires failed", s.failed, okVermilion, false},
		{"acquires unknown", s.unknown, okPurple, false},
	})
	if err != nil {
		return nil, err
	}
	lat, err := linePlot("plot-latency", "Acquire latency (ok acquires)", "ms", m.End, fb, []namedXYs{
		{"p50", s.p50, okBlue, false},
		{"p99", s.p99, okOrange, false},
		{"max", s.maxLat, okVermilion, true},
	})
	if err != nil {
		return nil, err
	}
	return []plotView{thr, lat}, nil
}
