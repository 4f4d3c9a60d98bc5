package report

import (
	"fmt"
	"html/template"
	"io"
	"time"
)

// MuseumPage is the museum of reported lock bugs: each exhibit with its
// sides (the buggy version breaking, the fixed one holding), linking to its
// matrix and its page. Links are relative to the museum's folder.
type MuseumPage struct {
	Generated time.Time
	Exhibits  []MuseumExhibit
	// Closing is the museum's tally in a line.
	Closing string
}

// MuseumExhibit is one reported bug, or one nobody reported: then Found
// says in words how it was found and Evidence names the lines that show
// it (EvidenceURL links to them, when they are at a URL).
type MuseumExhibit struct {
	Slug, Title, Library, Report, Fix string
	Found, Evidence, EvidenceURL      string
	Buggy, Fixed                      string
	// FirstAnomaly says how soon each cell found its anomaly.
	FirstAnomaly string
	// Error says why it could not be shown; its sides are then empty.
	Error string
	Sides []MuseumSide
	// Excerpt quotes its first anomaly as the run's report words it.
	Excerpt    string
	AsExpected bool
	// Matrix and Page link to its matrix page and its README.
	Matrix, Page string
}

// MuseumSide is one cell of an exhibit's matrix.
type MuseumSide struct {
	Cell, Side, Expected string
	// Kept is "n/N" seeds that kept the promise; First the median and
	// worst time to the first anomaly.
	Kept, First string
	AsExpected  bool
	// Report links to the first seed's report.html.
	Report string
}

var museumTmpl = template.Must(template.New("museum").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>locktorture museum</title>
<style>` + baseCSS + `
.exhibit { border-top: 1px solid #ccc; padding-top: .6em; margin-top: 1.2em; }
.exhibit h2 { font-size: 1.1em; margin: .2em 0; }
.excerpt { font-family: monospace; font-size: .9em; background: #f6f6f6; padding: .4em; white-space: pre-wrap; }
</style></head><body><main>
<h1>locktorture museum</h1>
<p class="muted">Bugs of real Redis lock libraries (reported, or found by reading their source or by locktorture), each run from the library's own code at the version that had it and at the version that fixed it (or beside the setting that avoids it). {{.Closing}}{{if .Generated}}; {{.Generated}}{{end}}.</p>
{{range .Exhibits}}<section class="exhibit" id="{{.Slug}}">
<h2>{{if .AsExpected}}<span class="verdict verdict-valid">as expected</span>{{else if .Error}}<span class="verdict verdict-invalid">not shown</span>{{else}}<span class="verdict verdict-invalid">NOT as expected</span>{{end}} {{.Slug}}: {{.Title}}</h2>
<p class="small">{{.Library}} · {{if .Report}}report <a href="{{.Report}}">{{.Report}}</a>{{else if .Found}}not reported: {{.Found}}; evidence {{if .EvidenceURL}}<a href="{{.EvidenceURL}}">{{.Evidence}}</a>{{else}}{{.Evidence}}{{end}}{{end}}{{if .Fix}} · fix <a href="{{.Fix}}">{{.Fix}}</a>{{end}}<br>
buggy: {{.Buggy}} · fixed: {{.Fixed}}{{if .Matrix}} · <a href="{{.Matrix}}">matrix</a> · <a href="{{.Page}}">page</a>{{end}}</p>
{{if .Error}}<p class="verdict-invalid">{{.Error}}</p>{{else}}
<table><tr><th>cell</th><th>side</th><th>expected</th><th>kept</th><th>first anomaly (median / worst)</th><th>result</th></tr>
{{range .Sides}}<tr><td>{{if .Report}}<a href="{{.Report}}">{{.Cell}}</a>{{else}}{{.Cell}}{{end}}</td><td>{{.Side}}</td><td>{{.Expected}}</td><td>{{.Kept}}</td><td>{{.First}}</td><td>{{if .AsExpected}}as expected{{else}}NOT as expected{{end}}</td></tr>
{{end}}</table>
{{if .FirstAnomaly}}<p class="small first-anomaly">{{.FirstAnomaly}}</p>{{end}}
{{if .Excerpt}}<div class="excerpt">{{.Excerpt}}</div>{{end}}{{end}}
</section>
{{end}}</main></body></html>
`))

// Museum writes the museum's page to w.
func Museum(w io.Writer, m MuseumPage) error {
	v := struct {
		MuseumPage
		Generated string
	}{MuseumPage: m}
	if !m.Generated.IsZero() {
		v.Generated = fmtStarted(m.Generated)
	}
	if err := museumTmpl.Execute(w, v); err != nil {
		return fmt.Errorf("render the museum page: %w", err)
	}
	return nil
}
