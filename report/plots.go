package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

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

// faultBands is a gonum plotter that shades the fault windows over the
// whole height of a plot, so rates and latencies line up with the faults
// the way they do on the timeline.
type faultBands struct {
	windows  []history.Window
	switches []int64
}

var (
	bandColor   = color.NRGBA{R: 245, G: 166, B: 35, A: 70}
	switchColor = color.NRGBA{R: 120, G: 60, B: 160, A: 255}
)

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
	sty := draw.LineStyle{Color: switchColor, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
	for _, t := range fb.switches {
		xs := x(float64(t) / 1e9)
		if xs >= c.Min.X && xs <= c.Max.X {
			c.StrokeLine2(sty, xs, c.Min.Y, xs, c.Max.Y)
		}
	}
}

// Thumbnail draws the legend entry of the bands.
func (fb faultBands) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(bandColor, pts)
}

type namedXYs struct {
	name  string
	xys   plotter.XYs
	color color.Color
	dash  bool
}

// linePlot draws named series over the fault bands and returns it as SVG
// ready to be inlined.
func linePlot(title, ylabel string, end int64, fb faultBands, lines []namedXYs) (string, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time since start (s)"
	p.Y.Label.Text = ylabel
	p.X.Min, p.X.Max = 0, math.Max(float64(end)/1e9, 1e-3)
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	p.Add(fb)
	if len(fb.windows) > 0 {
		p.Legend.Add("fault active", fb)
	}
	for _, l := range lines {
		if len(l.xys) == 0 {
			continue
		}
		ln, err := plotter.NewLine(l.xys)
		if err != nil {
			return "", fmt.Errorf("plot %s: %w", l.name, err)
		}
		ln.Color = l.color
		ln.Width = vg.Points(1.2)
		if l.dash {
			ln.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(ln)
		p.Legend.Add(l.name, ln)
	}
	// The plot's own data range ignores the bands; keep the x axis the run.
	p.X.Min, p.X.Max = 0, math.Max(float64(end)/1e9, 1e-3)
	wt, err := p.WriterTo(vg.Points(880), vg.Points(230), "svg")
	if err != nil {
		return "", fmt.Errorf("render %s: %w", title, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("render %s: %w", title, err)
	}
	return inlineSVG(buf.String()), nil
}

// inlineSVG strips the XML prolog so the SVG can sit inside HTML, and lets
// it scale with the page.
func inlineSVG(s string) string {
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:]
	}
	return strings.Replace(s, "<svg ", `<svg class="plot" preserveAspectRatio="xMinYMin meet" `, 1)
}

// plots renders the throughput and the acquire-latency plots.
func plots(sb *seriesBuilder, m *model) ([]string, error) {
	s := sb.build()
	fb := faultBands{windows: m.Faults}
	for _, sw := range m.Switches {
		fb.switches = append(fb.switches, sw.Time)
	}
	blue := color.NRGBA{R: 47, G: 109, B: 181, A: 255}
	grey := color.NRGBA{R: 140, G: 140, B: 140, A: 255}
	red := color.NRGBA{R: 200, G: 40, B: 40, A: 255}
	purple := color.NRGBA{R: 130, G: 60, B: 170, A: 255}
	thr, err := linePlot("Throughput", "per second", m.End, fb, []namedXYs{
		{"all operations", s.ops, grey, true},
		{"acquires ok", s.ok, blue, false},
		{"acquires failed", s.failed, red, false},
		{"acquires unknown", s.unknown, purple, false},
	})
	if err != nil {
		return nil, err
	}
	lat, err := linePlot("Acquire latency (ok acquires)", "milliseconds", m.End, fb, []namedXYs{
		{"p50", s.p50, blue, false},
		{"p99", s.p99, color.NRGBA{R: 230, G: 120, B: 20, A: 255}, false},
		{"max", s.maxLat, red, true},
	})
	if err != nil {
		return nil, err
	}
	return []string{thr, lat}, nil
}
