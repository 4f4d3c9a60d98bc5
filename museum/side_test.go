package museum

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/report"
)

// TestEveryExhibitSaysItsSides: every exhibit of bugs/ loads, its spec
// reads as a matrix spec (its kinds and classes spelled right), and each
// of its cells says which program or setting it runs.
func TestEveryExhibitSaysItsSides(t *testing.T) {
	slugs, err := Find("../bugs")
	if err != nil {
		t.Fatal(err)
	}
	for _, slug := range slugs {
		e, err := Load(filepath.Join("../bugs", slug))
		if err != nil {
			t.Error(err)
			continue
		}
		if err := checkSides(e); err != nil {
			t.Error(err)
		}
		if _, err := matrix.Load(filepath.Join(e.Dir, e.Spec), locktorture.Registries{}); err != nil {
			t.Errorf("exhibit %s: %v", slug, err)
		}
	}
}

// TestSidesAreTheCells: the table labels a cell with the program it ran,
// not with what it was expected to do: a control on the buggy program is
// the buggy side, a fixed side that breaks the fixed one, and a control
// that changes a setting says the setting.
func TestSidesAreTheCells(t *testing.T) {
	x := ExhibitResult{Slug: "ex", Library: "l", Report: "https://example.com/1", Buggy: "v1", Fixed: "v2", Dir: "ex"}
	ms := func(v float64) *float64 { return &v }
	m := &matrix.Result{Cells: []matrix.CellResult{
		{Name: "buggy-control", Lock: "exec:$LOCKTORTURE_EXHIBIT/buggy --flag", Expect: matrix.Expect{Holds: true}, Expected: "holds", Runs: 3, Held: 3, AsExpected: true},
		{Name: "fixed-breaks", Lock: "exec:${LOCKTORTURE_EXHIBIT}/fixed", Expect: matrix.Expect{Breaks: &matrix.Breaks{Kind: checker.KindDoubleHolder}},
			Expected: "double-holder", Runs: 3, Detected: 3, FirstMedianMs: ms(410), FirstWorstMs: ms(1200), AsExpected: true},
		{Name: "buggy-shared-1", Lock: "exec:$LOCKTORTURE_EXHIBIT/buggy", Side: "v1 with --share 1", Expect: matrix.Expect{Holds: true}, Expected: "holds", Runs: 3, Held: 3, AsExpected: true},
		{Name: "set", Lock: "exec:/usr/bin/python3 $LOCKTORTURE_EXHIBIT/lock.py", Side: "fixed", Expect: matrix.Expect{Holds: true}, Expected: "holds", Runs: 3, Held: 2},
	}, AsExpected: 3}
	x.take(m, t.TempDir())
	r := &Result{}
	r.add(x)
	var md bytes.Buffer
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"buggy-control": "buggy: v1", "fixed-breaks": "fixed: v2", "buggy-shared-1": "v1 with --share 1", "set": "fixed: v2"}
	for _, line := range strings.Split(md.String(), "\n") {
		f := strings.Split(line, " | ")
		if len(f) < 6 || want[f[3]] == "" {
			continue
		}
		if f[4] != want[f[3]] {
			t.Errorf("cell %s labelled %q, want %q", f[3], f[4], want[f[3]])
		}
		delete(want, f[3])
	}
	if len(want) != 0 {
		t.Errorf("cells missing from the table: %v\n%s", want, md.String())
	}
	// museum.md carries each exhibit's time to the first anomaly, for its
	// page to quote.
	sentence := "fixed-breaks (fixed: v2) showed double-holder in 3 of 3 seeds, the first 0.41s after the start at the median and 1.20s at the worst"
	if !strings.Contains(md.String(), "## Time to the first anomaly") || !strings.Contains(md.String(), sentence) ||
		!strings.Contains(md.String(), "set (fixed: v2) held in 2 of 3 seeds.") {
		t.Errorf("museum.md lacks the sentence %q:\n%s", sentence, md.String())
	}
	var page bytes.Buffer
	if err := report.Museum(&page, r.page()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "<td>buggy: v1</td><td>holds</td>") || !strings.Contains(page.String(), "<td>fixed: v2</td><td>double-holder</td>") {
		t.Errorf("the page labels the cells otherwise:\n%s", page.String())
	}
}

// TestSidesUnsaid: a cell whose program is neither buggy nor fixed and
// that has no side: key is refused before anything is built, in one line
// naming the exhibit and the cell.
func TestSidesUnsaid(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ex-2")
	write(t, dir, map[string]string{FileName: okExhibit, "spec.yaml": `cells:
  - name: a
    lock: exec:$LOCKTORTURE_EXHIBIT/buggy
    expect: holds
  - name: b
    lock: exec:/usr/bin/python3 $LOCKTORTURE_EXHIBIT/lock.py
    expect: holds
`})
	e, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = checkSides(e)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "exhibit ex-2") || !strings.Contains(err.Error(), "cell 2 (b): say which side it runs") {
		t.Errorf("a cell without a side: %v", err)
	}
}

// TestUnreportedExhibit: an exhibit nobody reported says how it was found
// and links its evidence; the page has no broken link. A sentence where
// the report's URL belongs is refused.
func TestUnreportedExhibit(t *testing.T) {
	base := strings.Replace(okExhibit, "report: https://example.com/1\n", "", 1)
	for _, tc := range []struct{ name, yaml, want string }{
		{"a sentence for a report", okExhibit + "fix: found by reading the code\n", `fix "found by reading the code": want the URL`},
		{"no report, no finder", base, "no report"},
		{"a finder of no kind", base + "found: luck\nevidence: x.go:1\n", `found "luck": want reading or locktorture`},
		{"no evidence", base + "found: reading\n", "no evidence"},
	} {
		dir := filepath.Join(t.TempDir(), "ex-3")
		write(t, dir, map[string]string{FileName: tc.yaml})
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line saying %q", tc.name, err, tc.want)
		}
	}
	for _, ev := range []string{"https://github.com/example/lock/blob/v1.2.0/lock.go#L120-L135", "lock.go:120-135 at v1.2.0"} {
		dir := filepath.Join(t.TempDir(), "ex-4")
		write(t, dir, map[string]string{FileName: base + "found: reading\nevidence: " + ev + "\n"})
		e, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		x := ExhibitResult{Slug: "ex-4", Dir: "ex-4"}
		x.describe(e)
		x.take(&matrix.Result{Cells: []matrix.CellResult{{Name: "fixed", Lock: "exec:$LOCKTORTURE_EXHIBIT/fixed", Expect: matrix.Expect{Holds: true}}}}, t.TempDir())
		r := &Result{}
		r.add(x)
		dir = t.TempDir()
		if err := r.write(dir); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, PageFile))
		if err != nil {
			t.Fatal(err)
		}
		page := string(b)
		if strings.Contains(page, "ZgotmplZ") || strings.Contains(page, `href=""`) || !strings.Contains(page, "not reported: found by reading the source; evidence") {
			t.Errorf("evidence %s: the page shows the source as:\n%s", ev, page)
		}
		if linked := strings.Contains(page, `<a href="`+ev+`">`); linked != strings.HasPrefix(ev, "https://") {
			t.Errorf("evidence %s linked %v", ev, linked)
		}
		md, _ := os.ReadFile(filepath.Join(dir, MarkdownFile))
		if !strings.Contains(string(md), "found by reading the source ("+ev+")") {
			t.Errorf("museum.md:\n%s", md)
		}
	}
}
