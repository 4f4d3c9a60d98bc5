package matrix

import (
	"fmt"
	"io"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/report"
)

// IndexFile is the grid page a matrix writes beside its other outputs.
const IndexFile = "index.html"

// Page lays the result out as the lock x fault grid of report.Matrix, with
// links to each seed's report relative to dir (where the page is written).
// Two cells of one lock under the same fault label (the same fault with
// other parameters) get columns of their own, named after the cell.
func (r *Result) Page(title, dir string) report.MatrixPage {
	p := report.MatrixPage{Title: title, Generated: time.Now()}
	seenLock, seenCol := map[string]bool{}, map[string]bool{}
	used := map[[2]string]bool{}
	for _, c := range r.Cells {
		col := c.Fault
		if used[[2]string{c.Lock, col}] {
			col = fmt.Sprintf("%s (%s)", c.Fault, c.Name)
		}
		used[[2]string{c.Lock, col}] = true
		if !seenLock[c.Lock] {
			seenLock[c.Lock] = true
			p.Locks = append(p.Locks, c.Lock)
		}
		if !seenCol[col] {
			seenCol[col] = true
			p.Faults = append(p.Faults, col)
		}
		cell := report.MatrixCell{Lock: c.Lock, Fault: col}
		if b := c.Expect.Breaks; b != nil {
			cell.Expect = report.Expectation{Breaks: true, Kind: string(b.Kind), Class: string(b.Class)}
		}
		for _, a := range c.Expect.Absent {
			cell.Expect.Absent = append(cell.Expect.Absent, a.spelled())
		}
		for _, s := range c.Seeds {
			asExpected := s.AsExpected
			run := report.SeedRun{Seed: s.Seed, Verdict: string(s.Verdict), AsExpected: &asExpected,
				Counts: checker.CountText(s.Counts, s.Classes)}
			if len(c.Expect.Absent) > 0 && s.Detail != "" {
				// Which of the control's kinds and classes held, or broke.
				run.Counts = strings.TrimPrefix(run.Counts+"; "+s.Detail, "; ")
			}
			for k := range s.Counts {
				run.Found = append(run.Found, string(k))
				for c := range s.Classes[k] {
					run.Found = append(run.Found, string(k)+"/"+string(c))
				}
			}
			sort.Strings(run.Found)
			if s.FirstMs != nil {
				run.FirstAnomaly = time.Duration(*s.FirstMs * float64(time.Millisecond))
			}
			switch {
			case s.Dir == "":
			case !filepath.IsAbs(s.Dir):
				// Relative to the matrix folder, where the page is.
				run.Report = path.Join(s.Dir, report.FileName)
			default:
				if rel, err := filepath.Rel(dir, filepath.Join(s.Dir, report.FileName)); err == nil {
					run.Report = filepath.ToSlash(rel)
				}
			}
			cell.Seeds = append(cell.Seeds, run)
		}
		p.Cells = append(p.Cells, cell)
	}
	return p
}

// WritePage writes the grid page of the result, for a page in dir.
func (r *Result) WritePage(w io.Writer, dir string) error {
	return report.Matrix(w, r.Page("locktorture matrix: "+r.Name, dir))
}
