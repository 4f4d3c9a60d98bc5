package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// HuntPage is the page of a torture hunt: what it found, each failure
// linking to the report of the run that first showed it, what it tried
// that held, and its progress over time. Links are relative to the hunt's
// folder.
type HuntPage struct {
	Lock, Strategy, Budget, Elapsed string
	Seed                            int64
	// Verdict is "holds", "breaks" or "untested", Closing the same in a
	// sentence.
	Verdict, Closing string
	Failures         []HuntFailure
	Hazards          []HuntFailure
	Coverage         []HuntCell
	Untested         []string
	// Timeline is the progress after each trial, for the plot.
	Timeline []HuntPoint
	Trials   int
}

// HuntFailure is one distinct failure.
type HuntFailure struct {
	Signature, Status, Detail string
	// Found is when it first showed, after the hunt's start.
	Found string
	// Report links to the report.html of the first run that showed it.
	Report, Command, Smallest string
	Recurred                  string
	ShownUnder                string
}

// HuntCell is one row of the coverage table.
type HuntCell struct {
	Cell                                string
	Runs, Held, Refused, Aims, Outcomes int
	Settings, Failures, Hazards         string
}

// HuntPoint is the hunt's progress after a trial.
type HuntPoint struct {
	Seconds                    float64
	Coverage, Failures, Hazard int
}

var huntTmpl = template.Must(template.New("hunt").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>torture hunt: {{.Lock}}</title>
<style>` + baseCSS + `
.cmd { font-family: monospace; font-size: .85em; word-break: break-all; }
</style></head><body><main>
<h1>torture hunt: {{.Lock}}</h1>
<p><span class="verdict verdict-{{.VerdictClass}}">{{.Verdict}}</span> {{.Closing}}</p>
<p class="muted small">strategy {{.Strategy}} · seed {{.Seed}} · budget {{.Budget}} · took {{.Elapsed}} · {{.Trials}} runs</p>
<h2>Failures</h2>
{{if .Failures}}<table><tr><th>failure</th><th>status</th><th>first seen</th><th>reruns of the smallest command</th><th>shown under</th></tr>
{{range .Failures}}<tr><td>{{if .Report}}<a href="{{.Report}}">{{.Signature}}</a>{{else}}{{.Signature}}{{end}}</td><td>{{.Status}}</td><td>{{.Found}}</td><td>{{.Recurred}}</td><td>{{.ShownUnder}}</td></tr>
<tr><td colspan="5"><div class="small">{{.Detail}}</div><div class="cmd">smallest: {{.Smallest}}</div></td></tr>
{{end}}</table>{{else}}<p>None beyond the TTL hazard.</p>{{end}}
<h2>The TTL hazard</h2>
<p class="muted small">A holder that goes on after its lease ran out (a pause, an overrun, a slow network) overlaps the next holder: expected of any lock with a TTL, reported apart.</p>
{{if .Hazards}}<table><tr><th>anomaly</th><th>first seen</th><th>shown under</th></tr>
{{range .Hazards}}<tr><td>{{if .Report}}<a href="{{.Report}}">{{.Signature}}</a>{{else}}{{.Signature}}{{end}}</td><td>{{.Found}}</td><td>{{.ShownUnder}}</td></tr>
{{end}}</table>{{else}}<p>Not seen.</p>{{end}}
<h2>Progress</h2>
{{.Plot}}
<h2>What was tried</h2>
<table><tr><th>topology / faults</th><th>runs</th><th>held</th><th>refused</th><th>aims hit</th><th>outcomes</th><th>failures</th><th>hazard</th><th>settings tried</th></tr>
{{range .Coverage}}<tr><td>{{.Cell}}</td><td>{{.Runs}}</td><td>{{.Held}}</td><td>{{.Refused}}</td><td>{{.Aims}}</td><td>{{.Outcomes}}</td><td>{{.Failures}}</td><td>{{.Hazards}}</td><td class="small">{{.Settings}}</td></tr>
{{end}}</table>
{{if .Untested}}<h2>Not tested</h2><ul>{{range .Untested}}<li>{{.}}</li>{{end}}</ul>{{end}}
</main></body></html>
`))

// Hunt writes a hunt's page to w.
func Hunt(w io.Writer, p HuntPage) error {
	plotSVG, err := huntPlot(p.Timeline)
	if err != nil {
		return err
	}
	v := struct {
		HuntPage
		VerdictClass string
		Plot         template.HTML
	}{HuntPage: p, Plot: plotSVG}
	switch p.Verdict {
	case "holds":
		v.VerdictClass = "valid"
	case "breaks":
		v.VerdictClass = "invalid"
	default:
		v.VerdictClass = "untested"
	}
	if err := huntTmpl.Execute(w, v); err != nil {
		return fmt.Errorf("render the hunt page: %w", err)
	}
	return nil
}

// HuntPlot is the SVG of distinct coverage and failures over the hunt's
// time, as the hunt page shows it (and hunt.svg beside it).
func HuntPlot(points []HuntPoint) ([]byte, error) {
	p := plot.New()
	p.X.Label.Text = "seconds into the hunt"
	p.Y.Label.Text = "distinct coverage"
	p.Legend.Top, p.Legend.Left = true, true
	var cov, fails, hz plotter.XYs
	for _, pt := range points {
		cov = append(cov, plotter.XY{X: pt.Seconds, Y: float64(pt.Coverage)})
		fails = append(fails, plotter.XY{X: pt.Seconds, Y: float64(pt.Failures)})
		hz = append(hz, plotter.XY{X: pt.Seconds, Y: float64(pt.Hazard)})
	}
	if len(cov) == 0 {
		cov = plotter.XYs{{}}
	}
	maxCov := 1.0
	for _, c := range cov {
		maxCov = max(maxCov, c.Y)
	}
	// Failures are few: drawn on the coverage scale, tenfold, and said so.
	scale := max(1, float64(int(maxCov/10)))
	for i := range fails {
		fails[i].Y *= scale
	}
	for i := range hz {
		hz[i].Y *= scale
	}
	for _, s := range []struct {
		name string
		xys  plotter.XYs
		c    draw.LineStyle
	}{
		{"coverage", cov, draw.LineStyle{Color: okBlue, Width: vg.Points(1.5)}},
		{fmt.Sprintf("failures (x%.0f)", scale), fails, draw.LineStyle{Color: okVermilion, Width: vg.Points(1.5)}},
		{fmt.Sprintf("TTL hazard (x%.0f)", scale), hz, draw.LineStyle{Color: okGrey, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}},
	} {
		if len(s.xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(s.xys)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", s.name, err)
		}
		l.StepStyle = plotter.PostStep
		l.LineStyle = s.c
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	c := vgsvg.New(vg.Points(720), vg.Points(260))
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("draw the hunt plot: %w", err)
	}
	return b.Bytes(), nil
}

func huntPlot(points []HuntPoint) (template.HTML, error) {
	b, err := HuntPlot(points)
	if err != nil {
		return "", err
	}
	// The SVG is the plot library's own output, not input of anyone's.
	if i := bytes.Index(b, []byte("<svg")); i > 0 {
		b = b[i:]
	}
	return template.HTML(b), nil
}
