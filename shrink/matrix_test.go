package shrink

import (
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/matrix"
)

// TestFailures: the first failing seed with an anomaly of each cell not
// as expected, and the anomaly to keep; a cell whose failures found
// nothing gets a note.
func TestFailures(t *testing.T) {
	seed := func(n int64, ok bool, counts map[checker.Kind]int) matrix.SeedResult {
		return matrix.SeedResult{Seed: n, RunID: "x", Dir: "d", AsExpected: ok, Counts: counts}
	}
	dh := map[checker.Kind]int{checker.KindDoubleHolder: 2, checker.KindStuckLock: 1}
	res := &matrix.Result{Cells: []matrix.CellResult{
		{Name: "fine", AsExpected: true, Seeds: []matrix.SeedResult{seed(1, true, nil)}},
		{Name: "control", Expect: matrix.Expect{Holds: true}, Seeds: []matrix.SeedResult{seed(1, true, nil), seed(2, false, nil), seed(3, false, dh)}},
		{Name: "narrow", Expect: matrix.Expect{Holds: true, Absent: []matrix.Pattern{{Kind: checker.KindStuckLock}}}, Seeds: []matrix.SeedResult{seed(4, false, dh)}},
		{Name: "within", Expect: matrix.Expect{Holds: true, Absent: []matrix.Pattern{{Kind: checker.KindDoubleHolder, Class: checker.ClassWithinLease}}},
			Seeds: []matrix.SeedResult{{Seed: 6, RunID: "x", Dir: "d", Counts: dh, Classes: checker.ClassCounts{checker.KindDoubleHolder: {checker.ClassWithinLease: 1, checker.ClassLeaseOutlived: 1}}}}},
		{Name: "never", Expect: matrix.Expect{Breaks: &matrix.Breaks{Kind: checker.KindForeignRelease}}, Seeds: []matrix.SeedResult{seed(5, false, nil)}},
	}}
	got := Failures(res)
	if len(got) != 4 {
		t.Fatalf("%d failures", len(got))
	}
	if c := got[0]; c.Cell != "control" || c.Seed.Seed != 3 || c.Target != nil || c.Note != "" {
		t.Errorf("control: %+v", c)
	}
	if c := got[1]; c.Seed.Seed != 4 || c.Target == nil || c.Target.Kind != checker.KindStuckLock {
		t.Errorf("holds but for stuck-lock: %+v", c)
	}
	if c := got[2]; c.Seed.Seed != 6 || c.Target == nil || c.Target.Kind != checker.KindDoubleHolder || c.Target.Class != checker.ClassWithinLease {
		t.Errorf("holds but for within-lease double holders: %+v", c)
	}
	if c := got[3]; c.Seed.Seed != 5 || c.Note == "" {
		t.Errorf("a break that never came: %+v", c)
	}
}
