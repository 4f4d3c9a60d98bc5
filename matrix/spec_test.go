package matrix

import (
	"github.com/locktorture/locktorture"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
)

const goodSpec = `
name: demo
seeds: 2..4
min-rate: 0.9
defaults:
  clients: 3
  ttl: 200ms
  hold: 5ms..20ms
  duration: 2s
cells:
  - lock: set-px
    overrun: 0.3
    expect: {breaks: {kind: foreign-release}}
  - name: token-pause
    lock: token
    faults: [pause-client, latency]
    ttl: 500ms
    seeds: [7, 9]
    expect: {breaks: {kind: double-holder, class: lease-outlived}}
  - lock: token-validity
    faults: [latency]
    expect: {holds: [double-holder]}
  - lock: token
    expect: holds
`

func TestParseGood(t *testing.T) {
	s, err := Parse(strings.NewReader(goodSpec), "file", locktorture.Registries{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "demo" || s.Rate() != 0.9 || len(s.Cells) != 4 {
		t.Fatalf("spec %+v", s)
	}
	names := []string{"set-px-overrun", "token-pause", "token-validity-latency", "token-none"}
	for i, want := range names {
		if s.Cells[i].Name != want {
			t.Errorf("cell %d named %q, want %q", i, s.Cells[i].Name, want)
		}
	}
	o := s.Cells[1].Options(7, "out")
	if o.TTL != 500*time.Millisecond || o.Clients != 3 || o.HoldMax != 20*time.Millisecond ||
		strings.Join(o.Faults, ",") != "pause-client,latency" || o.Seed != 7 || o.Duration != 2*time.Second {
		t.Errorf("cell overrides and defaults merged wrong: %+v", o)
	}
	if o := s.Cells[0].Options(1, ""); o.Overrun != 0.3 || o.TTL != 200*time.Millisecond {
		t.Errorf("cell 1: overrun %v ttl %v", o.Overrun, o.TTL)
	}
	if got := s.SeedsFor(&s.Cells[0], nil); len(got) != 3 || got[0] != 2 {
		t.Errorf("spec seeds: %v", got)
	}
	if got := s.SeedsFor(&s.Cells[1], nil); len(got) != 2 || got[1] != 9 {
		t.Errorf("cell seeds: %v", got)
	}
	if got := s.SeedsFor(&s.Cells[1], Seeds{1}); len(got) != 1 || got[0] != 1 {
		t.Errorf("--seeds override: %v", got)
	}
	e := s.Cells[1].Expect
	if e.Breaks == nil || e.Breaks.Kind != checker.KindDoubleHolder || e.Breaks.Class != checker.ClassLeaseOutlived {
		t.Errorf("expect: %+v", e)
	}
	if e := s.Cells[2].Expect; !e.Holds || len(e.Absent) != 1 || e.String() != "holds: no double-holder" {
		t.Errorf("expect holds list: %+v", e)
	}
}

// A cell may expect the kinds of every checker of the registry, the
// lease-claims ones (built in, run on every history) among them, and they
// have no classes.
func TestParseLeaseClaimKinds(t *testing.T) {
	spec := `cells:
  - {name: phantom, lock: token, expect: {breaks: {kind: phantom-release}}}
  - {name: renewal, lock: token, expect: {breaks: {kind: phantom-renewal}}}
  - {name: failed, lock: token, expect: {breaks: {kind: failed-release}}}
  - {name: control, lock: token, expect: {holds: [phantom-release, phantom-renewal, failed-release]}}
`
	s, err := Parse(strings.NewReader(spec), "file", locktorture.Registries{})
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range []checker.Kind{checker.KindPhantomRelease, checker.KindPhantomRenewal, checker.KindFailedRelease} {
		if b := s.Cells[i].Expect.Breaks; b == nil || b.Kind != k {
			t.Errorf("cell %d expects %+v, want %s", i+1, s.Cells[i].Expect, k)
		}
	}
	if e := s.Cells[3].Expect; e.String() != "holds: no phantom-release, phantom-renewal, failed-release" {
		t.Errorf("control cell expects %q", e.String())
	}
	_, err = Parse(strings.NewReader("cells:\n  - {lock: token, expect: {breaks: {kind: failed-release, class: within-lease}}}\n"), "file", locktorture.Registries{})
	if err == nil || !strings.Contains(err.Error(), `failed-release has no class "within-lease"`) {
		t.Errorf("a class of failed-release: %v", err)
	}
}

// TestParseBad: each class of mistake gets one line that names the cell
// (or the field) and the problem, before anything runs.
func TestParseBad(t *testing.T) {
	cell := func(body string) string {
		return "defaults: {ttl: 200ms}\ncells:\n  - name: c1\n" + body
	}
	cases := []struct {
		name, spec, want string
	}{
		{"empty", "", "spec is empty"},
		{"no cells", "name: x\n", "no cells"},
		{"unknown top field", "colour: red\ncells: []\n", "field colour not found"},
		{"unknown cell field", cell("    lock: token\n    expect: holds\n    colour: red\n"), `cell 1 (c1): line 6: unknown setting "colour"`},
		{"unknown default field", "defaults: {tll: 1s}\ncells: [{lock: token, expect: holds}]\n", `defaults: line 1: unknown setting "tll"`},
		{"near miss", cell("    lock: token\n    expect: holds\n    nemesis-intervall: 1s\n"), "did you mean nemesis-duration, nemesis-interval"},
		{"command-line setting", cell("    lock: token\n    expect: holds\n    seed: 4\n"), `setting "seed" belongs on the command line`},
		{"bad default value", "defaults: {clients: many}\ncells: [{lock: token, expect: holds}]\n", `defaults: line 1: clients: want an integer, got "many"`},
		{"unknown lock", cell("    lock: nope\n    expect: holds\n"), `cell 1 (c1): unknown lock "nope"`},
		{"unknown fault", cell("    lock: token\n    faults: [meteor]\n    expect: holds\n"), `cell 1 (c1): unknown fault "meteor"`},
		{"unknown workload", cell("    lock: token\n    workload: chess\n    expect: holds\n"), `cell 1 (c1): unknown workload "chess"`},
		{"unknown topology", cell("    lock: token\n    topology: mesh\n    expect: holds\n"), `cell 1 (c1): unknown topology "mesh"`},
		{"no lock", cell("    expect: holds\n"), "cell 1 (c1): no lock"},
		{"no expect", cell("    lock: token\n"), "cell 1 (c1): no expect"},
		{"breaks without kind", cell("    lock: token\n    expect: {breaks: {class: within-lease}}\n"), "names no anomaly kind"},
		{"unknown kind", cell("    lock: token\n    expect: {breaks: {kind: meltdown}}\n"), `unknown anomaly kind "meltdown"`},
		{"unknown class", cell("    lock: token\n    expect: {breaks: {kind: double-holder, class: sometimes}}\n"), `no class "sometimes"`},
		{"class of a classless kind", cell("    lock: token\n    expect: {breaks: {kind: foreign-release, class: within-lease}}\n"), `no class "within-lease"`},
		{"unknown breaks field", cell("    lock: token\n    expect: {breaks: {kind: double-holder, often: yes}}\n"), `unknown field "often"`},
		{"bad expect word", cell("    lock: token\n    expect: breaks\n"), `expect "breaks"`},
		{"unknown holds kind", cell("    lock: token\n    expect: {holds: [meltdown]}\n"), `unknown anomaly kind "meltdown"`},
		{"bad duration", cell("    lock: token\n    ttl: soon\n    expect: holds\n"), `line 5: ttl: want a duration like 300ms or 2s, got "soon"`},
		{"negative duration", cell("    lock: token\n    duration: -1s\n    expect: holds\n"), "negative"},
		{"bad hold", cell("    lock: token\n    hold: 50ms..10ms\n    expect: holds\n"), "--hold 50ms..10ms: want 0 <= MIN <= MAX"},
		{"bad overrun", cell("    lock: token\n    overrun: 2\n    expect: holds\n"), "cell 1 (c1): --overrun 2"},
		{"bad seeds", "seeds: 5..1\ncells: []\n", `seeds "5..1"`},
		{"bad min-rate", "min-rate: 0\ncells: [{lock: token, expect: holds}]\n", "min-rate 0"},
		{"duplicate name", "cells:\n  - {lock: token, expect: holds}\n  - {lock: token, expect: holds}\n", "cell 2 (token-none): same name as cell 1"},
		{"bad name", "cells:\n  - {name: a/b, lock: token, expect: holds}\n", `name "a/b"`},
		{"not yaml", "cells: [\n", "spec:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.spec), "t", locktorture.Registries{})
			if err == nil {
				t.Fatalf("no error for:\n%s", tc.spec)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error %q does not mention %q", msg, tc.want)
			}
		})
	}
}

func TestParseSeeds(t *testing.T) {
	cases := []struct {
		in   string
		want int
		ok   bool
	}{
		{"1..20", 20, true}, {"7", 1, true}, {" 3..3 ", 1, true},
		{"5..1", 0, false}, {"a..b", 0, false}, {"1..", 0, false}, {"0..99999", 0, false},
	}
	for _, tc := range cases {
		got, err := ParseSeeds(tc.in)
		if (err == nil) != tc.ok || len(got) != tc.want {
			t.Errorf("ParseSeeds(%q) = %v, %v", tc.in, got, err)
		}
	}
}
