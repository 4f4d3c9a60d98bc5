package matrix

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jstemmer/go-junit-report/v2/junit"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster/clustertest"
)

// classSpec is a control under a pause that forbids the double holder that
// means the lock failed (within-lease) and tolerates the one every TTL
// lock shows when its holder is paused past its lease (lease-outlived).
const classSpec = `
name: classes
seeds: 1..2
defaults: {clients: 2, ttl: 300ms, hold: 5ms..30ms, duration: 3s, nemesis-interval: 1s}
cells:
  - name: token-pause
    lock: token
    faults: [pause-client]
    expect: {holds: [double-holder/within-lease, foreign-release]}
  - name: token-pause-breaks
    lock: token
    faults: [pause-client]
    expect: {breaks: double-holder/lease-outlived}
  - name: token-pause-first
    lock: token
    faults: [pause-client]
    expect: {breaks: {kind: double-holder}, first: {class: within-lease}}
`

// TestParsePatterns: holds takes kinds and kind/class patterns, breaks its
// object or a kind/class, and first a class of what the cell breaks with.
func TestParsePatterns(t *testing.T) {
	s, err := Parse(strings.NewReader(classSpec), "c", locktorture.Registries{})
	if err != nil {
		t.Fatal(err)
	}
	e := s.Cells[0].Expect
	want := []Pattern{{checker.KindDoubleHolder, checker.ClassWithinLease}, {checker.KindForeignRelease, ""}}
	if !e.Holds || len(e.Absent) != 2 || e.Absent[0] != want[0] || e.Absent[1] != want[1] {
		t.Errorf("holds patterns: %+v", e)
	}
	if got := e.String(); got != "holds: no double-holder (within-lease), foreign-release" {
		t.Errorf("said %q", got)
	}
	if b := s.Cells[1].Expect.Breaks; b == nil || b.Kind != checker.KindDoubleHolder || b.Class != checker.ClassLeaseOutlived {
		t.Errorf("breaks K/C: %+v", s.Cells[1].Expect)
	}
	if f := s.Cells[2].Expect.First; f == nil || f.Kind != checker.KindDoubleHolder || f.Class != checker.ClassWithinLease {
		t.Errorf("first: %+v", s.Cells[2].Expect)
	}
	// matrix.json keeps the patterns as strings, and reads the kinds
	// written before classes.
	b, _ := json.Marshal(e)
	if !strings.Contains(string(b), `"absent":["double-holder/within-lease","foreign-release"]`) {
		t.Errorf("json %s", b)
	}
	var old Expect
	if err := json.Unmarshal([]byte(`{"holds":true,"absent":["double-holder"]}`), &old); err != nil || old.Absent[0].Kind != checker.KindDoubleHolder {
		t.Errorf("old matrix.json: %+v %v", old, err)
	}
}

// TestParseBadPatterns: each bad spelling is one line naming the cell.
func TestParseBadPatterns(t *testing.T) {
	for _, tc := range []struct{ expect, want string }{
		{"{holds: [meltdown/within-lease]}", `unknown anomaly kind "meltdown"`},
		{"{holds: [double-holder/sometimes]}", `double-holder has no class "sometimes"`},
		{"{holds: [foreign-release/within-lease]}", `foreign-release has no class "within-lease" (it has no classes)`},
		{"{holds: [double-holder/]}", "want KIND or KIND/CLASS"},
		{"{holds: [a/b/c]}", "want KIND or KIND/CLASS"},
		{"{holds: [{kind: double-holder}]}", "want a list of anomaly kinds"},
		{"{breaks: double-holder/never}", `double-holder has no class "never"`},
		{"{breaks: {kind: double-holder, class: within-lease}, first: {class: lease-outlived}}", "want a class of what the cell breaks with"},
		{"{breaks: {kind: double-holder}, first: {kind: foreign-release}}", "want a class of what the cell breaks with"},
		{"{holds: [double-holder], first: {class: within-lease}}", "first goes only with breaks"},
		{"{breaks: {kind: double-holder}, first: {class: soon}}", `expect first: double-holder has no class "soon"`},
	} {
		spec := "cells:\n  - name: c1\n    lock: token\n    expect: " + tc.expect + "\n"
		_, err := Parse(strings.NewReader(spec), "t", locktorture.Registries{})
		if err == nil {
			t.Errorf("%s: no error", tc.expect)
			continue
		}
		t.Log(err)
		// A spelling the registries reject names the cell; one that is no
		// pattern at all is a YAML error naming its line.
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) || !strings.Contains(msg, "cell 1 (c1)") && !strings.Contains(msg, "line 4") {
			t.Errorf("%s: error %q, want one line naming the cell and %q", tc.expect, msg, tc.want)
		}
	}
}

// TestHoldsAClass: a control forbidding within-lease double holders under
// a pause is as expected with lease-outlived ones present, and not as
// expected when a within-lease one appears; the table, the page and JUnit
// say which class held or broke. first takes the time to first anomaly
// from the class it names.
func TestHoldsAClass(t *testing.T) {
	spec, err := Parse(strings.NewReader(classSpec), "c", locktorture.Registries{})
	if err != nil {
		t.Fatal(err)
	}
	runs := scripted{
		"token-pause-seed1":        result(checker.Invalid, dh(checker.ClassLeaseOutlived, 100), dh(checker.ClassLeaseOutlived, 700)),
		"token-pause-seed2":        result(checker.Invalid, dh(checker.ClassLeaseOutlived, 100), dh(checker.ClassWithinLease, 400)),
		"token-pause-breaks-seed1": result(checker.Invalid, dh(checker.ClassWithinLease, 100), dh(checker.ClassLeaseOutlived, 300)),
		"token-pause-breaks-seed2": result(checker.Invalid, dh(checker.ClassWithinLease, 100)),
		"token-pause-first-seed1":  result(checker.Invalid, dh(checker.ClassLeaseOutlived, 100), dh(checker.ClassWithinLease, 800)),
		"token-pause-first-seed2":  result(checker.Invalid, dh(checker.ClassLeaseOutlived, 200)),
	}
	out := t.TempDir()
	res, err := Run(context.Background(), spec, Options{OutDir: out, Run: runs.run})
	if err != nil {
		t.Fatal(err)
	}
	c, b, f := res.Cells[0], res.Cells[1], res.Cells[2]
	if s := c.Seeds[0]; !s.AsExpected || !strings.Contains(s.Detail, "held: no double-holder (within-lease), foreign-release") ||
		!strings.Contains(s.Detail, "tolerated: double-holder 2 (lease-outlived 2)") {
		t.Errorf("lease-outlived only: %+v", s)
	}
	if s := c.Seeds[1]; s.AsExpected || !strings.Contains(s.Detail, "broke: double-holder (within-lease)") {
		t.Errorf("a within-lease double holder: %+v", s)
	}
	if c.AsExpected || c.Held != 1 {
		t.Errorf("control cell: %+v", c)
	}
	if b.Detected != 1 || *b.FirstMedianMs != 300 || b.AsExpected {
		t.Errorf("breaks double-holder/lease-outlived: %+v", b)
	}
	if f.Detected != 2 || !f.AsExpected || *f.FirstMedianMs != 800 || f.Seeds[1].FirstMs != nil || f.Expected != "double-holder, first double-holder (within-lease)" {
		t.Errorf("first within-lease: %+v", f)
	}
	if err := res.WriteFiles(out); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(out, MarkdownFile))
	if !strings.Contains(string(md), "holds: no double-holder (within-lease), foreign-release") {
		t.Errorf("matrix.md does not say the class:\n%s", md)
	}
	page, _ := os.ReadFile(filepath.Join(out, IndexFile))
	for _, w := range []string{"holds: no double-holder/within-lease, foreign-release", "broke: double-holder (within-lease)"} {
		if !strings.Contains(string(page), w) {
			t.Errorf("the page does not say %q", w)
		}
	}
	x, _ := os.ReadFile(filepath.Join(out, JUnitFile))
	var ju junit.Testsuites
	if err := xml.Unmarshal(x, &ju); err != nil {
		t.Fatal(err)
	}
	for _, tc := range ju.Suites[0].Testcases {
		if tc.Classname == "token-pause" && tc.Name == "seed 2" && (tc.Failure == nil || !strings.Contains(tc.Failure.Data, "broke: double-holder (within-lease)")) {
			t.Errorf("junit of the control's seed 2: %+v", tc.Failure)
		}
		if tc.Classname == "token-pause" && tc.Name == "seed 1" && (tc.SystemOut == nil || !strings.Contains(tc.SystemOut.Data, "held: no double-holder (within-lease)")) {
			t.Errorf("junit of the control's seed 1: %+v", tc.SystemOut)
		}
	}
}

// TestHoldsAClassRealRun: token under aimed pauses on real Redis shows
// lease-outlived double holders, and no within-lease one: the control
// forbidding that class holds.
func TestHoldsAClassRealRun(t *testing.T) {
	clustertest.Need(t)
	spec, err := Parse(strings.NewReader(`seeds: [1]
cells:
  - name: token-pause
    lock: token
    faults: [pause-client]
    clients: 4
    ttl: 300ms
    hold: 5ms..30ms
    duration: 4s
    nemesis-interval: 1s
    expect: {holds: [double-holder/within-lease]}
`), "real", locktorture.Registries{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), spec, Options{OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Cells[0].Seeds[0]
	if s.Error != "" || !s.AsExpected || s.Classes[checker.KindDoubleHolder][checker.ClassLeaseOutlived] == 0 {
		t.Errorf("want lease-outlived double holders and the control as expected: %+v", s)
	}
}
