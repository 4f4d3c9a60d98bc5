package matrix

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/jstemmer/go-junit-report/v2/junit"

	"github.com/locktorture/locktorture/internal/atomicfile"
)

// Files the matrix writes into its output folder.
const (
	JSONFile     = "matrix.json"
	MarkdownFile = "matrix.md"
	JUnitFile    = "junit.xml"
	// ShrinkDir holds, per shrunk cell, shrink.json and the smallest run
	// (torture matrix --shrink).
	ShrinkDir = "shrink"
)

// row is one cell of the table, in words, shared by the terminal and Markdown.
func (c *CellResult) row() []string {
	kept := c.Held
	if c.Expect.Breaks != nil {
		kept = c.Detected
	}
	rate := fmt.Sprintf("%d/%d", kept, c.Runs)
	if c.Errors > 0 {
		rate += fmt.Sprintf(" (%d errors)", c.Errors)
	}
	result := "as expected"
	if !c.AsExpected {
		result = "NOT as expected"
	}
	return []string{c.Name, c.Lock, c.Fault, c.Expected, rate, ms(c.FirstMedianMs), ms(c.FirstWorstMs),
		fmt.Sprint(c.Unknown), result}
}

var header = []string{"cell", "lock", "fault", "expected", "kept", "first (median)", "first (worst)", "unknown", "result"}

func ms(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.2fs", *v/1000)
}

// WriteTable prints the matrix as an aligned table with a closing line.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for i := range r.Cells {
		fmt.Fprintln(tw, strings.Join(r.Cells[i].row(), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, r.closing())
	return err
}

func (r *Result) closing() string {
	s := fmt.Sprintf("%d of %d cells as expected (min-rate %.2f), %d runs in %.1fs", r.AsExpected, len(r.Cells),
		r.MinRate, r.Runs, float64(r.DurationMs)/1000)
	if r.Errors > 0 {
		s += fmt.Sprintf(", %d harness errors", r.Errors)
	}
	if r.Interrupted {
		s += ", interrupted"
	}
	return s
}

// WriteMarkdown writes the table as Markdown.
func (r *Result) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Matrix %s\n\n", r.Name)
	b.WriteString("| " + strings.Join(header, " | ") + " |\n")
	b.WriteString(strings.Repeat("|---", len(header)) + "|\n")
	for i := range r.Cells {
		cells := r.Cells[i].row()
		for j, s := range cells {
			cells[j] = strings.ReplaceAll(s, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	b.WriteString("\n" + r.closing() + "\n")
	for _, c := range r.Cells {
		if sh := c.Shrunk; sh != nil {
			if len(sh.Command) > 0 {
				fmt.Fprintf(&b, "\n%s seed %d, shrunk: `%s`\n", c.Name, sh.Seed, strings.Join(sh.Command, " "))
			} else {
				fmt.Fprintf(&b, "\n%s seed %d, not shrunk: %s\n", c.Name, sh.Seed, sh.Note)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes matrix.json.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// JUnit returns one test suite with a test case per cell and seed
// (classname = the cell), so CI shows each seed that broke a promise.
func (r *Result) JUnit() junit.Testsuites {
	suite := junit.Testsuite{Name: "matrix " + r.Name, Time: secs(r.DurationMs), Timestamp: r.Started.Format("2006-01-02T15:04:05Z")}
	for _, c := range r.Cells {
		for _, s := range c.Seeds {
			tc := junit.Testcase{Name: fmt.Sprintf("seed %d", s.Seed), Classname: c.Name, Time: secs(s.DurationMs)}
			switch {
			case s.Error != "":
				tc.Error = &junit.Result{Message: s.Error, Type: "harness"}
			case s.Interrupted:
				tc.Skipped = &junit.Result{Message: "interrupted"}
			case !s.AsExpected:
				msg := fmt.Sprintf("expected %s, got verdict %s", c.Expected, s.Verdict)
				if s.Found != "" {
					msg += " (" + s.Found + ")"
				}
				data := s.Detail + "\nrun folder: " + s.Dir
				if sh := c.Shrunk; sh != nil && sh.Seed == s.Seed && len(sh.Command) > 0 {
					data += "\nsmallest run that still fails: " + strings.Join(sh.Command, " ") + "\nshrink folder: " + sh.Dir
				}
				tc.Failure = &junit.Result{Message: msg, Type: "expectation", Data: data}
			default:
				out := fmt.Sprintf("%s: verdict %s", c.Expected, s.Verdict)
				if s.Detail != "" {
					out += "\n" + s.Detail
				}
				tc.SystemOut = &junit.Output{Data: out}
			}
			suite.AddTestcase(tc)
		}
	}
	var ts junit.Testsuites
	ts.AddSuite(suite)
	return ts
}

func secs(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }

// WriteFiles writes matrix.json, matrix.md, junit.xml and index.html into
// dir, each atomically.
func (r *Result) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("make matrix dir: %w", err)
	}
	write := func(name string, fn func(io.Writer) error) error {
		err := atomicfile.Write(filepath.Join(dir, name), fn)
		if err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		return nil
	}
	ju := r.JUnit()
	for name, fn := range map[string]func(io.Writer) error{
		JSONFile: r.WriteJSON, MarkdownFile: r.WriteMarkdown, JUnitFile: ju.WriteXML,
		IndexFile: func(w io.Writer) error { return r.WritePage(w, dir) },
	} {
		if err := write(name, fn); err != nil {
			return err
		}
	}
	return nil
}
