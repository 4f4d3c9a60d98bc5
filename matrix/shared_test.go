package matrix

import (
	"strings"
	"testing"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
)

// TestExpectShared: a breaking cell may ask whether the double holder's
// two holders shared one lock object (--share K), and then only such a
// double holder keeps its promise; a mistake is one line before anything
// runs.
func TestExpectShared(t *testing.T) {
	spec := `cells:
  - {name: across, lock: token, share: 2, expect: {breaks: {kind: double-holder, class: within-lease, shared: false}}}
  - {name: within, lock: token, share: 2, expect: {breaks: {kind: double-holder, shared: true}}}
`
	s, err := Parse(strings.NewReader(spec), "file", locktorture.Registries{})
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	one := checker.Anomaly{Kind: checker.KindDoubleHolder, Class: checker.ClassWithinLease, SharedObject: &yes}
	two := checker.Anomaly{Kind: checker.KindDoubleHolder, Class: checker.ClassWithinLease, SharedObject: &no}
	unsaid := checker.Anomaly{Kind: checker.KindDoubleHolder, Class: checker.ClassWithinLease}
	for _, c := range []struct {
		cell int
		text string
		a    checker.Anomaly
		want bool
	}{
		{0, "double-holder (within-lease, two lock objects)", two, true},
		{0, "double-holder (within-lease, two lock objects)", one, false},
		{0, "double-holder (within-lease, two lock objects)", unsaid, false},
		{1, "double-holder (one lock object)", one, true},
		{1, "double-holder (one lock object)", two, false},
	} {
		b := s.Cells[c.cell].Expect.Breaks
		if b == nil || b.String() != c.text {
			t.Fatalf("cell %d expects %v, want %s", c.cell+1, s.Cells[c.cell].Expect, c.text)
		}
		if got := b.matches(c.a); got != c.want {
			t.Errorf("%s matches %+v: %v, want %v", c.text, c.a.SharedObject, got, c.want)
		}
	}
	// Counts do not say which objects a double holder's holders used:
	// only a listed one keeps the promise.
	rep := &checker.Report{Count: map[checker.Kind]int{checker.KindDoubleHolder: 3},
		Classes: checker.ClassCounts{checker.KindDoubleHolder: {checker.ClassWithinLease: 3}}}
	if s.Cells[0].Expect.Breaks.counted(rep) {
		t.Error("counts alone kept a promise about lock objects")
	}
	for _, bad := range []struct{ expect, want string }{
		{"{breaks: {kind: foreign-release, shared: false}}", "shared is said of a double-holder only"},
		{"{breaks: {kind: double-holder, shared: often}}", `shared "often": want true or false`},
	} {
		_, err := Parse(strings.NewReader("cells:\n  - {lock: token, expect: "+bad.expect+"}\n"), "file", locktorture.Registries{})
		if err == nil || !strings.Contains(err.Error(), bad.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("expect %s: error %v, want one line saying %q", bad.expect, err, bad.want)
		}
	}
}
