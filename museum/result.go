package museum

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/locktorture/locktorture/internal/atomicfile"
	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/report"
)

// Files the museum writes into its output folder, beside a folder per
// exhibit.
const (
	JSONFile     = "museum.json"
	MarkdownFile = "museum.md"
	PageFile     = "index.html"
)

// Result is the whole museum: museum.json.
type Result struct {
	Started     time.Time       `json:"started"`
	DurationMs  int64           `json:"duration_ms"`
	Seeds       string          `json:"seeds,omitempty"`
	Exhibits    []ExhibitResult `json:"exhibits"`
	AsExpected  int             `json:"as_expected"`
	Errors      int             `json:"errors"`
	Interrupted bool            `json:"interrupted,omitempty"`
}

// ExhibitResult is one exhibit: what it shows, what building it made and
// every cell of its matrix.
type ExhibitResult struct {
	Slug    string `json:"slug"`
	Title   string `json:"title,omitempty"`
	Library string `json:"library,omitempty"`
	Report  string `json:"report,omitempty"`
	Fix     string `json:"fix,omitempty"`
	// Found and Evidence stand for a report nobody filed: how the bug
	// was found, and the source lines that show it.
	Found    string `json:"found,omitempty"`
	Evidence string `json:"evidence,omitempty"`
	Buggy    string `json:"buggy,omitempty"`
	Fixed    string `json:"fixed,omitempty"`
	// Dir is the exhibit's folder, relative to the museum's.
	Dir   string  `json:"dir"`
	Built []Built `json:"built,omitempty"`
	// Cells are its matrix's cells (matrix.json in Dir has every seed).
	Cells []matrix.CellResult `json:"cells,omitempty"`
	// Excerpt quotes the first anomaly of its first breaking cell.
	Excerpt string `json:"excerpt,omitempty"`
	// FirstAnomaly says in a sentence how soon each cell found its
	// anomaly, or how often it held: what the exhibit's page quotes.
	FirstAnomaly string `json:"first_anomaly,omitempty"`
	// Error says, in one line, why it could not be shown: it did not
	// load, build or run.
	Error      string `json:"error,omitempty"`
	AsExpected bool   `json:"as_expected"`
}

func (x *ExhibitResult) describe(e *Exhibit) {
	x.Title, x.Library, x.Report, x.Fix, x.Buggy, x.Fixed = e.Title, e.Library, e.Report, e.Fix, e.Buggy, e.Fixed
	x.Found, x.Evidence = e.Found, e.Evidence
}

// source is where the bug comes from, in the table's words: its report,
// or how it was found and the lines that show it.
func (x *ExhibitResult) source() string {
	if x.Report != "" || x.Found == "" {
		return x.Report
	}
	return Finders[x.Found] + " (" + x.Evidence + ")"
}

// take records the exhibit's matrix: as expected when every cell was.
func (x *ExhibitResult) take(m *matrix.Result, out string) {
	x.Cells = m.Cells
	resolveSides(x.Cells)
	x.AsExpected = len(m.Cells) > 0 && m.AsExpected == len(m.Cells) && !m.Interrupted
	for i := range m.Cells {
		if x.Excerpt = excerpt(out, &m.Cells[i]); x.Excerpt != "" {
			break
		}
	}
	x.FirstAnomaly = x.sentence()
}

// sentence says how soon each cell found its anomaly and how often each
// control held: "buggy-unlock (buggy: v4.0.3) showed foreign-release in
// 20 of 20 seeds, the first 0.41s after the start at the median and 1.20s
// at the worst; fixed-unlock (fixed: v4.0.4) held in 20 of 20 seeds."
func (x *ExhibitResult) sentence() string {
	var parts []string
	for i := range x.Cells {
		c := &x.Cells[i]
		p := fmt.Sprintf("%s (%s) ", c.Name, x.label(c.Side))
		if c.Expect.Breaks != nil {
			p += fmt.Sprintf("showed %s in %d of %d seeds", c.Expect.Breaks, c.Detected, c.Runs)
			if c.FirstMedianMs != nil && c.FirstWorstMs != nil {
				what := ""
				if f := c.Expect.First; f != nil {
					what = " " + f.String()
				}
				p += fmt.Sprintf(", the first%s %.2fs after the start at the median and %.2fs at the worst", what,
					*c.FirstMedianMs/1000, *c.FirstWorstMs/1000)
			}
		} else {
			p += fmt.Sprintf("held in %d of %d seeds", c.Held, c.Runs)
		}
		if c.Errors > 0 {
			p += fmt.Sprintf(" (%d runs ended in a harness error)", c.Errors)
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + "."
}

func (r *Result) add(x ExhibitResult) {
	r.Exhibits = append(r.Exhibits, x)
	switch {
	case x.Error != "":
		r.Errors++
	case x.AsExpected:
		r.AsExpected++
	}
}

// Code is the museum's exit code: 0 every exhibit as expected, 1 some not,
// 2 some could not be shown (or the museum was interrupted).
func (r *Result) Code() int {
	switch {
	case r.Errors > 0 || r.Interrupted:
		return 2
	case r.AsExpected < len(r.Exhibits):
		return 1
	}
	return 0
}

// Closing is the museum's last line.
func (r *Result) Closing() string {
	s := fmt.Sprintf("%d of %d exhibits as expected in %.1fs", r.AsExpected, len(r.Exhibits), float64(r.DurationMs)/1000)
	if r.Errors > 0 {
		s += fmt.Sprintf(", %d could not be shown", r.Errors)
	}
	if r.Interrupted {
		s += ", interrupted"
	}
	return s
}

// write writes museum.json, museum.md and the page into dir.
func (r *Result) write(dir string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the museum: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, JSONFile), func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	}); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, MarkdownFile), r.WriteMarkdown); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, PageFile), func(w io.Writer) error { return report.Museum(w, r.page()) })
}

// side is one cell in the table's words: what it kept, and how soon the
// anomaly came.
func side(c *matrix.CellResult) (kept, first string) {
	n := c.Held
	if c.Expect.Breaks != nil {
		n = c.Detected
	}
	kept = fmt.Sprintf("%d/%d", n, c.Runs)
	if c.Errors > 0 {
		kept += fmt.Sprintf(" (%d errors)", c.Errors)
	}
	first = "-"
	if c.FirstMedianMs != nil && c.FirstWorstMs != nil {
		first = fmt.Sprintf("%.2fs / %.2fs", *c.FirstMedianMs/1000, *c.FirstWorstMs/1000)
	}
	return kept, first
}

// WriteMarkdown writes the museum's table: one row per cell of every
// exhibit, the buggy side's anomaly and how soon it came beside the fixed
// side's holding.
func (r *Result) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| exhibit | library | report | cell | side | expected | kept | first anomaly (median / worst) | result |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range r.Exhibits {
		if x.Error != "" {
			fmt.Fprintf(&b, "| %s | %s | %s | | | | | | could not be shown: %s |\n", x.Slug, x.Library, mdCell(x.source()), mdCell(x.Error))
			continue
		}
		for i := range x.Cells {
			c := &x.Cells[i]
			kept, first := side(c)
			result := "as expected"
			if !c.AsExpected {
				result = "NOT as expected"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.Slug, mdCell(x.Library), mdCell(x.source()), c.Name,
				mdCell(x.label(c.Side)), mdCell(c.Expected), kept, first, result)
		}
	}
	b.WriteString("\n" + r.Closing() + "\n")
	wrote := false
	for _, x := range r.Exhibits {
		if x.FirstAnomaly == "" {
			continue
		}
		if !wrote {
			b.WriteString("\n## Time to the first anomaly\n")
			wrote = true
		}
		fmt.Fprintf(&b, "\n**%s**: %s\n", x.Slug, x.FirstAnomaly)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// page is the museum as report.Museum draws it.
func (r *Result) page() report.MuseumPage {
	p := report.MuseumPage{Generated: r.Started, Closing: r.Closing()}
	for _, x := range r.Exhibits {
		e := report.MuseumExhibit{Slug: x.Slug, Title: x.Title, Library: x.Library, Report: x.Report, Fix: x.Fix,
			Buggy: x.Buggy, Fixed: x.Fixed, Error: x.Error, Excerpt: x.Excerpt, AsExpected: x.AsExpected,
			FirstAnomaly: x.FirstAnomaly}
		if x.Report == "" && x.Found != "" {
			e.Found, e.Evidence = Finders[x.Found], x.Evidence
			if IsURL(x.Evidence) {
				e.EvidenceURL = x.Evidence
			}
		}
		if x.Error == "" {
			e.Matrix, e.Page = x.Dir+"/"+matrix.IndexFile, x.Dir+"/README.md"
		}
		for i := range x.Cells {
			c := &x.Cells[i]
			kept, first := side(c)
			s := report.MuseumSide{Cell: c.Name, Side: x.label(c.Side), Expected: c.Expected, Kept: kept, First: first, AsExpected: c.AsExpected}
			for _, sd := range c.Seeds {
				if sd.Dir != "" {
					s.Report = x.Dir + "/" + sd.Dir + "/report.html"
					break
				}
			}
			e.Sides = append(e.Sides, s)
		}
		p.Exhibits = append(p.Exhibits, e)
	}
	return p
}
