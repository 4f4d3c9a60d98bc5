package matrix

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jstemmer/go-junit-report/v2/junit"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
)

// scripted answers each run from a table keyed by run id, so the judging,
// rates and outputs are checked without Redis.
type scripted map[string]*locktorture.Result

func (s scripted) run(_ context.Context, o locktorture.Options) (*locktorture.Result, error) {
	r, ok := s[o.RunID]
	if !ok {
		return nil, errors.New("start redis: no such binary")
	}
	r.RunID, r.Dir = o.RunID, filepath.Join(o.OutDir, o.RunID)
	return r, nil
}

func result(v checker.Verdict, as ...checker.Anomaly) *locktorture.Result {
	rep := &checker.Report{Verdict: v, Anomalies: as, Count: map[checker.Kind]int{}, Classes: checker.ClassCounts{}}
	for _, a := range as {
		rep.Count[a.Kind]++
		if a.Class != "" {
			if rep.Classes[a.Kind] == nil {
				rep.Classes[a.Kind] = map[checker.Class]int{}
			}
			rep.Classes[a.Kind][a.Class]++
		}
	}
	return &locktorture.Result{Verdict: v, Report: rep}
}

func dh(class checker.Class, startMs int64) checker.Anomaly {
	return checker.Anomaly{Kind: checker.KindDoubleHolder, Class: class, StartNS: startMs * 1e6,
		Detail: "clients 0 and 1 both held lock:0"}
}

// scriptedSpec has three cells of three seeds for the scripted runner: one
// that breaks, one that holds, one that breaks on some seeds only.
const scriptedSpec = `
name: scripted
seeds: 1..3
cells:
  - name: breaks
    lock: token
    faults: [pause-client]
    expect: {breaks: {kind: double-holder, class: within-lease}}
  - name: holds
    lock: token
    expect: holds
  - name: flaky
    lock: token
    faults: [latency]
    expect: {breaks: {kind: double-holder}}
`

func TestRunJudgesCells(t *testing.T) {
	spec, err := Parse(strings.NewReader(scriptedSpec), "s", locktorture.Registries{})
	if err != nil {
		t.Fatal(err)
	}
	runs := scripted{
		// Found in every seed; the wrong class first does not count.
		"breaks-seed1": result(checker.Invalid, dh(checker.ClassLeaseOutlived, 100), dh(checker.ClassWithinLease, 900)),
		"breaks-seed2": result(checker.Invalid, dh(checker.ClassWithinLease, 300)),
		"breaks-seed3": result(checker.Invalid, dh(checker.ClassWithinLease, 2000), dh(checker.ClassWithinLease, 500)),
		"holds-seed1":  result(checker.Valid),
		"holds-seed2":  result(checker.Unknown),
		"holds-seed3":  result(checker.Valid),
		"flaky-seed1":  result(checker.Invalid, dh(checker.ClassLeaseOutlived, 1500)),
		"flaky-seed2":  result(checker.Valid),
		// flaky-seed3 is missing: a harness error.
	}
	var lines []string
	out := t.TempDir()
	res, err := Run(context.Background(), spec, Options{OutDir: out, Run: runs.run, Progress: func(p Progress) {
		lines = append(lines, p.Line())
	}})
	if err != nil {
		t.Fatal(err)
	}
	b, c, f := res.Cells[0], res.Cells[1], res.Cells[2]
	if !b.AsExpected || b.Detected != 3 || b.Rate != 1 || *b.FirstMedianMs != 500 || *b.FirstWorstMs != 900 {
		t.Errorf("breaking cell: %+v", b)
	}
	if c.AsExpected || c.Held != 2 || c.Unknown != 1 || c.Valid != 2 {
		t.Errorf("control with an unknown verdict: %+v", c)
	}
	if f.AsExpected || f.Runs != 2 || f.Detected != 1 || f.Rate != 0.5 || f.Errors != 1 || f.Seeds[2].Error == "" {
		t.Errorf("flaky cell: %+v", f)
	}
	if res.OK() || res.AsExpected != 1 || res.Errors != 1 {
		t.Errorf("matrix: %d as expected, %d errors, ok %v", res.AsExpected, res.Errors, res.OK())
	}
	if len(lines) != 18 || !strings.Contains(lines[1], "cell 1/3 token x pause-client seed 1: invalid (double-holder (within-lease)) as expected") {
		t.Errorf("progress lines: %q", lines)
	}
	// matrix.json names each run folder inside the matrix folder, so that
	// the folder can be moved whole.
	if got := b.Seeds[0].Dir; got != "runs/breaks-seed1" {
		t.Errorf("run dir %s, want runs/breaks-seed1", got)
	}
	checkMatrixFiles(t, res, out)
}

// checkMatrixFiles writes the files of TestRunJudgesCells's matrix to out
// and checks that each says what the runner judged.
func checkMatrixFiles(t *testing.T, res *Result, out string) {
	t.Helper()
	if err := res.WriteFiles(out); err != nil {
		t.Fatal(err)
	}
	// index.html: the grid, each cell judged as the runner judged it, each
	// seed linked to its run's report.
	page, err := os.ReadFile(filepath.Join(out, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`href="runs/breaks-seed1/report.html"`, `data-status="as-expected"`, `data-status="unexpected"`,
		`title="invalid: double-holder 2 (lease-outlived 1, within-lease 1)"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("index.html lacks %s", want)
		}
	}
	checkJUnit(t, out)
	var back Result
	j, _ := os.ReadFile(filepath.Join(out, JSONFile))
	if err := json.Unmarshal(j, &back); err != nil || len(back.Cells) != 3 || back.Cells[0].Seeds[2].RunID != "breaks-seed3" ||
		*back.Cells[0].Seeds[2].FirstMs != 500 {
		t.Errorf("matrix.json: %v %s", err, j)
	}
	md, _ := os.ReadFile(filepath.Join(out, MarkdownFile))
	if !bytes.Contains(md, []byte("| breaks | token | pause-client | double-holder (within-lease) | 3/3 | 0.50s | 0.90s | 0 | as expected |")) {
		t.Errorf("matrix.md:\n%s", md)
	}
}

// checkJUnit checks that the junit.xml in out reads back as JUnit: one
// case per cell and seed, the failures and errors where the promise was
// not kept.
func checkJUnit(t *testing.T, out string) {
	t.Helper()
	x, err := os.ReadFile(filepath.Join(out, JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	var ju junit.Testsuites
	if err := xml.Unmarshal(x, &ju); err != nil {
		t.Fatalf("junit.xml does not parse: %v", err)
	}
	if ju.Tests != 9 || ju.Failures != 2 || ju.Errors != 1 || len(ju.Suites) != 1 || len(ju.Suites[0].Testcases) != 9 {
		t.Fatalf("junit counts: tests %d failures %d errors %d", ju.Tests, ju.Failures, ju.Errors)
	}
	var failed []string
	for _, tc := range ju.Suites[0].Testcases {
		if tc.Failure != nil {
			failed = append(failed, tc.Classname+"/"+tc.Name+": "+tc.Failure.Message)
		}
	}
	want := []string{"holds/seed 2: expected holds, got verdict unknown",
		"flaky/seed 2: expected double-holder, got verdict valid"}
	if strings.Join(failed, "\n") != strings.Join(want, "\n") {
		t.Errorf("junit failures:\n%s\nwant:\n%s", strings.Join(failed, "\n"), strings.Join(want, "\n"))
	}
}

// TestRunStopsWhenCancelled: a cancelled matrix stops after the run in
// progress and says it was interrupted.
func TestRunStopsWhenCancelled(t *testing.T) {
	spec, err := Parse(strings.NewReader(scriptedSpec), "s", locktorture.Registries{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	run := func(ctx context.Context, o locktorture.Options) (*locktorture.Result, error) {
		calls++
		cancel() // Ctrl-C during the first run
		r := result(checker.Valid)
		r.Interrupted = true
		return r, nil
	}
	res, err := Run(ctx, spec, Options{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || !res.Interrupted || res.OK() || res.Cells[0].Runs != 0 {
		t.Errorf("calls %d, interrupted %v, cells %+v", calls, res.Interrupted, res.Cells)
	}
}

func TestSelectCells(t *testing.T) {
	spec, err := Parse(strings.NewReader(scriptedSpec), "s", locktorture.Registries{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		filter string
		want   string
		err    string
	}{
		{"", "breaks,holds,flaky", ""},
		{"holds", "holds", ""},
		{"b*, fl*", "breaks,flaky", ""},
		{"zzz", "", "matches no cell"},
		{"[", "", "bad pattern"},
	}
	for _, tc := range cases {
		got, err := selectCells(spec.Cells, tc.filter)
		var names []string
		for _, c := range got {
			names = append(names, c.Name)
		}
		if strings.Join(names, ",") != tc.want || (err == nil) != (tc.err == "") ||
			(err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("filter %q: %v, %v", tc.filter, names, err)
		}
	}
}

// TestBreakingRunsStopAtTheirAnomaly: a breaking cell's run is told to end
// at the first anomaly that fulfils the cell, and only at that one; a
// control runs its whole duration, and --full-runs keeps every run going.
func TestBreakingRunsStopAtTheirAnomaly(t *testing.T) {
	spec, err := Parse(strings.NewReader(scriptedSpec), "s", locktorture.Registries{})
	if err != nil {
		t.Fatal(err)
	}
	for _, full := range []bool{false, true} {
		stops := map[string]func(checker.Anomaly) bool{}
		run := func(_ context.Context, o locktorture.Options) (*locktorture.Result, error) {
			stops[o.RunID] = o.StopWhen
			return result(checker.Valid), nil
		}
		if _, err := Run(context.Background(), spec, Options{Run: run, FullRuns: full, Cells: "breaks,holds"}); err != nil {
			t.Fatal(err)
		}
		stop, control := stops["breaks-seed1"], stops["holds-seed1"]
		if full {
			if stop != nil || control != nil {
				t.Errorf("--full-runs: a run was told to stop early")
			}
			continue
		}
		if control != nil {
			t.Errorf("a control run was told to stop at an anomaly")
		}
		if stop == nil {
			t.Fatalf("a breaking run was not told to stop at its anomaly")
		}
		for _, tc := range []struct {
			a    checker.Anomaly
			want bool
		}{
			{dh(checker.ClassWithinLease, 1), true},
			{dh(checker.ClassLeaseOutlived, 1), false}, // the cell wants within-lease
			{checker.Anomaly{Kind: checker.KindStuckLock}, false},
		} {
			if got := stop(tc.a); got != tc.want {
				t.Errorf("stop at %s (%s): %v, want %v", tc.a.Kind, tc.a.Class, got, tc.want)
			}
		}
	}
}

// TestJudgeCountsBeyondListed: a report lists 50 anomalies of a kind and
// counts them all by class; a breaking cell whose class shows only past the
// listed ones is detected all the same (with no time to first to tell),
// and one whose class the counts lack is not.
func TestJudgeCountsBeyondListed(t *testing.T) {
	listed := make([]checker.Anomaly, 50)
	for i := range listed {
		listed[i] = dh(checker.ClassLeaseOutlived, int64(i+1))
	}
	rep := &checker.Report{Verdict: checker.Invalid, Anomalies: listed, Count: map[checker.Kind]int{checker.KindDoubleHolder: 51},
		Classes: checker.ClassCounts{checker.KindDoubleHolder: {checker.ClassLeaseOutlived: 50, checker.ClassWithinLease: 1}}}
	for _, tc := range []struct {
		class    checker.Class
		detected bool
		first    bool
	}{
		{checker.ClassLeaseOutlived, true, true},
		{checker.ClassWithinLease, true, false},
		{"", true, true},
	} {
		var sr SeedResult
		judge(&sr, Expect{Breaks: &Breaks{Kind: checker.KindDoubleHolder, Class: tc.class}}, rep)
		if sr.Detected != tc.detected || sr.AsExpected != tc.detected || (sr.FirstMs != nil) != tc.first {
			t.Errorf("breaks double-holder %q: %+v", tc.class, sr)
		}
	}
	rep.Classes[checker.KindDoubleHolder] = map[checker.Class]int{checker.ClassLeaseOutlived: 51}
	var sr SeedResult
	if judge(&sr, Expect{Breaks: &Breaks{Kind: checker.KindDoubleHolder, Class: checker.ClassWithinLease}}, rep); sr.Detected {
		t.Errorf("within-lease detected where none was counted: %+v", sr)
	}
	c := CellResult{Expect: Expect{Breaks: &Breaks{Kind: checker.KindDoubleHolder}}, Seeds: []SeedResult{{Verdict: checker.Invalid, Detected: true, AsExpected: true}}}
	c.summarise(1)
	if !c.AsExpected || c.FirstMedianMs != nil {
		t.Errorf("a seed detected beyond the listed: cell %+v", c)
	}
}

// TestJudgeUntestedControl: a control whose seed tested nothing (its fault
// never took effect, no acquire succeeded) has not shown the lock holding,
// whether it promises a valid verdict or only the absence of some kinds; a
// run that tested everything holds.
func TestJudgeUntestedControl(t *testing.T) {
	untested := []string{"fault pause-client never took effect: the lock was not shown surviving it"}
	for _, tc := range []struct {
		name     string
		expect   Expect
		rep      checker.Report
		asExpect bool
	}{
		{"holds, untested", Expect{}, checker.Report{Verdict: checker.Untested, Untested: untested}, false},
		{"holds: no foreign-release, untested", Expect{Absent: []Pattern{{Kind: checker.KindForeignRelease}}},
			checker.Report{Verdict: checker.Untested, Untested: untested}, false},
		{"holds: no foreign-release, double holders found but the fault never landed", Expect{Absent: []Pattern{{Kind: checker.KindForeignRelease}}},
			checker.Report{Verdict: checker.Invalid, Count: map[checker.Kind]int{checker.KindDoubleHolder: 3}, Untested: untested}, false},
		{"holds, tested", Expect{}, checker.Report{Verdict: checker.Valid}, true},
	} {
		var sr SeedResult
		judge(&sr, tc.expect, &tc.rep)
		if sr.AsExpected != tc.asExpect {
			t.Errorf("%s: as expected %v, want %v (%+v)", tc.name, sr.AsExpected, tc.asExpect, sr)
		}
		if !tc.asExpect && !strings.Contains(sr.Detail, "untested") {
			t.Errorf("%s: detail %q does not say untested", tc.name, sr.Detail)
		}
	}
}
