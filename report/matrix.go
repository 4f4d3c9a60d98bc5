package report

import (
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"time"
)

// MatrixPage is a lock x fault grid of runs, as `torture matrix` produces
// it: rows are locks, columns faults, each cell what was expected and what
// the seeds showed. It is plain data so the matrix runner fills it without
// knowing how it is drawn.
type MatrixPage struct {
	Title     string
	Generated time.Time
	Locks     []string // rows, in order
	Faults    []string // columns, in order
	Cells     []MatrixCell
}

// MatrixCell is one lock under one fault over several seeds.
type MatrixCell struct {
	Lock, Fault string
	Expect      Expectation
	Seeds       []SeedRun
}

// Expectation is what a cell should show: a lock that breaks with an
// anomaly of Kind (and Class, when set), or one that holds (against the
// kinds or kind/class patterns of Absent, when set).
type Expectation struct {
	Breaks bool
	Kind   string
	Class  string
	Absent []string
}

// String is how the page and the matrix spec say it: "breaks
// double-holder/within-lease", "breaks stuck-lock", "holds" or "holds: no
// double-holder/within-lease".
func (e Expectation) String() string {
	if !e.Breaks {
		if len(e.Absent) > 0 {
			return "holds: no " + strings.Join(e.Absent, ", ")
		}
		return "holds"
	}
	s := "breaks " + e.Kind
	if e.Class != "" {
		s += "/" + e.Class
	}
	return s
}

// SeedRun is one seed's run of a cell.
type SeedRun struct {
	Seed    int64
	Verdict string // valid, invalid, unknown
	// Found lists the anomalies it found as "kind" or "kind/class".
	Found []string
	// FirstAnomaly is when the first anomaly began, since the run's start;
	// meaningless when nothing was found.
	FirstAnomaly time.Duration
	// Report is the link to the run's report.html, relative to the page.
	Report string
	// Counts says what the run found, by kind and class, over every
	// anomaly (checker.CountText); the link's tooltip.
	Counts string
	// AsExpected, when set, is the runner's own judgement of this seed
	// (a spec may expect more than Expectation can say, such as "holds
	// against these kinds"); nil lets the page judge from Found.
	AsExpected *bool
}

// detected reports whether the run shows what e expects to break.
func (e Expectation) detected(r SeedRun) bool {
	if r.AsExpected != nil {
		return *r.AsExpected == e.Breaks
	}
	if !e.Breaks {
		return len(r.Found) > 0 || r.Verdict == "invalid"
	}
	for _, f := range r.Found {
		kind, class, _ := strings.Cut(f, "/")
		if kind == e.Kind && (e.Class == "" || class == e.Class) {
			return true
		}
	}
	return false
}

// CellSummary is what a cell shows, computed from its seeds.
type CellSummary struct {
	Runs, Detected int
	// Status: "as-expected" (a breaking lock broke on every seed, a holding
	// one on none), "partly" (a breaking lock broke on some seeds only),
	// "unexpected" (it never broke, or a holding lock broke), "empty".
	Status            string
	MedianTTF, MaxTTF time.Duration
}

// Summary computes the cell's detection rate, time to first anomaly and
// whether it went as expected.
func (c MatrixCell) Summary() CellSummary {
	s := CellSummary{Runs: len(c.Seeds)}
	var ttf []time.Duration
	for _, r := range c.Seeds {
		if c.Expect.detected(r) {
			s.Detected++
			if r.FirstAnomaly > 0 { // zero: found, but not when
				ttf = append(ttf, r.FirstAnomaly)
			}
		}
	}
	sort.Slice(ttf, func(i, j int) bool { return ttf[i] < ttf[j] })
	if len(ttf) > 0 {
		s.MedianTTF, s.MaxTTF = ttf[(len(ttf)-1)/2], ttf[len(ttf)-1]
	}
	switch {
	case s.Runs == 0:
		s.Status = "empty"
	case c.Expect.Breaks && s.Detected == s.Runs, !c.Expect.Breaks && s.Detected == 0:
		s.Status = "as-expected"
	case c.Expect.Breaks && s.Detected > 0:
		s.Status = "partly"
	default:
		s.Status = "unexpected"
	}
	return s
}

type matrixCellView struct {
	MatrixCell
	CellSummary
	Missing bool
	Rate    string
	TTF     string
}

type matrixView struct {
	MatrixPage
	Rows      [][]matrixCellView
	Generated string
	Tally     map[string]int
}

var matrixTmpl = template.Must(template.New("matrix").Funcs(template.FuncMap{"dur": fmtDur}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>` + baseCSS + `
table.matrix td{min-width:150px;font-size:12.5px}
td.as-expected{background:#d4efe6}td.partly{background:#fdefc4}td.unexpected{background:#f6d3bd}td.empty{background:#f6f6f6;color:#999}
.expect{font-weight:600}.status{font-size:11px;text-transform:uppercase;letter-spacing:.04em}
.seeds a{margin-right:4px}
</style></head><body><main>
<h1>{{.Title}}</h1>
<p class="muted">{{if .Generated}}{{.Generated}} · {{end}}{{len .Locks}} locks × {{len .Faults}} faults ·
{{index .Tally "as-expected"}} as expected, {{index .Tally "partly"}} partly, {{index .Tally "unexpected"}} unexpected</p>
<p class="small">Green: as expected (a lock expected to break broke on every seed; one expected to hold never did). Amber: broke on some seeds only. Red: not as expected. Each cell: expectation, seeds showing it, time from the start to the first such anomaly (median / worst), links to each seed's report.</p>
<table class="matrix" id="matrix"><tr><th>lock \ fault</th>{{range .Faults}}<th>{{.}}</th>{{end}}</tr>
{{range $i, $row := .Rows}}<tr><th>{{index $.Locks $i}}</th>{{range $row}}{{if .Missing}}<td class="empty">–</td>{{else}}<td class="cell {{.Status}}" data-status="{{.Status}}">
<div class="expect">{{.Expect}}</div>
<div>detected {{.Rate}}</div>{{if .TTF}}<div>first after {{.TTF}}</div>{{end}}
<div class="status">{{.Status}}</div>
<div class="seeds small">{{range .Seeds}}{{if .Report}}<a href="{{.Report}}" title="{{.Verdict}}{{if .Counts}}: {{.Counts}}{{end}}">seed {{.Seed}}</a>{{else}}seed {{.Seed}} {{end}}{{end}}</div>
</td>{{end}}{{end}}</tr>
{{end}}</table></main></body></html>
`))

func fmtDur(d time.Duration) string { return d.Round(time.Millisecond).String() }

// Matrix writes the page of a matrix to w.
func Matrix(w io.Writer, m MatrixPage) error {
	if m.Title == "" {
		m.Title = "locktorture matrix"
	}
	v := matrixView{MatrixPage: m, Tally: map[string]int{"as-expected": 0, "partly": 0, "unexpected": 0}}
	if !m.Generated.IsZero() {
		v.Generated = fmtStarted(m.Generated)
	}
	type at struct{ lock, fault string }
	cells := map[at]MatrixCell{}
	for _, c := range m.Cells {
		cells[at{c.Lock, c.Fault}] = c
	}
	for _, l := range m.Locks {
		var row []matrixCellView
		for _, f := range m.Faults {
			c, ok := cells[at{l, f}]
			if !ok {
				row = append(row, matrixCellView{Missing: true})
				continue
			}
			cv := matrixCellView{MatrixCell: c, CellSummary: c.Summary()}
			cv.Rate = fmt.Sprintf("%d/%d seeds", cv.Detected, cv.Runs)
			if cv.Detected > 0 && c.Expect.Breaks {
				cv.TTF = fmtDur(cv.MedianTTF) + " / " + fmtDur(cv.MaxTTF)
			}
			v.Tally[cv.Status]++
			row = append(row, cv)
		}
		v.Rows = append(v.Rows, row)
	}
	if err := matrixTmpl.Execute(w, v); err != nil {
		return fmt.Errorf("render matrix page: %w", err)
	}
	return nil
}
