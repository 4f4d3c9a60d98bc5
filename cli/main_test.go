package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/cluster/clustertest"
)

// TestBadInput: every mistake a user can make gets one line naming it and
// exit code 2, never a panic or a usage dump.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	garbage := write("garbage.jsonl", "{not json\n")
	unpaired := write("unpaired.jsonl", `{"i":0,"t":5,"type":"ok","op":"acquire","id":7,"process":1,"client":1}`+"\n")
	backwards := write("backwards.jsonl", `{"i":0,"t":5,"type":"invoke","op":"acquire","id":1,"process":1,"client":1,"key":"k"}`+"\n"+
		`{"i":1,"t":4,"type":"ok","op":"acquire","id":1,"process":1,"client":1,"key":"k"}`+"\n")
	cases := []struct {
		args []string
		want string // a fragment of the one-line error
	}{
		{nil, "usage"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"run", "--lock", "nope"}, `unknown lock "nope"`},
		{[]string{"run", "--clients", "x"}, "-clients"},
		{[]string{"run", "--hold", "5..3"}, "-hold"},
		{[]string{"run", "--hold", "100ms..10ms"}, "-hold"},
		{[]string{"run", "--overrun", "1.5"}, "overrun"},
		{[]string{"run", "--ttl", "0s"}, "ttl"},
		{[]string{"run", "--expect", "maybe"}, "-expect"},
		{[]string{"run", "--nemesis", "meteor"}, `unknown fault "meteor"`},
		{[]string{"run", "--topology", "mesh"}, `unknown topology "mesh"`},
		{[]string{"run", "--persistence", "sometimes"}, "-persistence"},
		{[]string{"run", "stray"}, `unexpected argument "stray"`},
		{[]string{"run", "--target", "nearest"}, `flag -target: want protocol, random, got "nearest"`},
		{[]string{"run", "--trigger", "sometimes"}, `flag -trigger: want time, acquire, release, got "sometimes"`},
		{[]string{"run", "--warmup", "-1s"}, `flag -warmup: want a duration of 0 or more, got negative "-1s"`},
		{[]string{"run", "--run-id", "../escape"}, "run id"},
		{[]string{"check"}, "want exactly one"},
		{[]string{"check", filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"check", garbage}, "line 1"},
		{[]string{"check", unpaired}, "not open"},
		{[]string{"check", backwards}, "goes back"},
		{[]string{"check", "--check-timeout", "0s", backwards}, "check-timeout"},
		{[]string{"check", "--out"}, "-out"},
		{[]string{"list", "extra"}, "unexpected argument"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			if code != exitUsage {
				t.Errorf("exit %d, want %d (stderr %q)", code, exitUsage, errb.String())
			}
			msg := strings.TrimRight(errb.String(), "\n")
			if strings.Contains(msg, "\n") && tc.args != nil {
				t.Errorf("error is not one line: %q", msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("stderr %q does not mention %q", msg, tc.want)
			}
		})
	}
}

// `torture list` shows every checker of the registry with its summary,
// the lock checkers run on every history (lease-claims among them)
// included.
func TestListShowsEveryChecker(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"list"}, &out, &errb); code != exitValid {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	checkers := out.String()[strings.Index(out.String(), "checkers ("):]
	for _, e := range locktorture.Builtin().Checkers.Entries() {
		if !strings.Contains(checkers, "  "+e.Name+" ") || !strings.Contains(checkers, e.Summary) {
			t.Errorf("list does not show checker %s (%s):\n%s", e.Name, e.Summary, checkers)
		}
	}
	if !strings.Contains(checkers, "lease-claims") {
		t.Errorf("list does not show lease-claims:\n%s", checkers)
	}
}

// TestRunCheckAndGate runs a breaking lock through the CLI, re-checks its
// folder, and gates on --expect; it needs redis-server.
func TestRunCheckAndGate(t *testing.T) {
	clustertest.Need(t)
	out := t.TempDir()
	base := []string{"run", "--lock", "set-px", "--ttl", "200ms", "--hold", "5ms..20ms", "--overrun", "0.3",
		"--duration", "3s", "--seed", "7", "--out", out, "--run-id", "gate"}
	var stdout, stderr bytes.Buffer
	if code := run(base, &stdout, &stderr); code != exitInvalid {
		t.Fatalf("set-px overrun: exit %d, want %d\n%s%s", code, exitInvalid, stdout.String(), stderr.String())
	}
	for _, want := range []string{"verdict: INVALID", "foreign-release", "double-holder"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	runDir := filepath.Join(out, "gate")
	for _, f := range []string{"history.jsonl", "summary.json", "linearizability.html"} {
		if _, err := os.Stat(filepath.Join(runDir, f)); err != nil {
			t.Errorf("run folder lacks %s: %v", f, err)
		}
	}
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"check", runDir}, exitInvalid},
		{[]string{"check", filepath.Join(runDir, "history.jsonl"), "--expect", "invalid"}, exitValid},
		{[]string{"check", "--expect", "valid", runDir}, exitInvalid},
	}
	for _, tc := range cases {
		stdout.Reset()
		if code := run(tc.args, &stdout, &stderr); code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, code, tc.code, stdout.String())
		}
	}
	stdout.Reset()
	valid := []string{"run", "--lock", "token", "--ttl", "300ms", "--hold", "5ms..20ms", "--duration", "2s",
		"--seed", "7", "--out", out, "--expect", "valid"}
	if code := run(valid, &stdout, &stderr); code != exitValid {
		t.Errorf("token, no faults, --expect valid: exit %d\n%s", code, stdout.String())
	}
}

// brokenHistory is a within-lease double holder: client 2 acquires while
// client 1's lease has most of its second to run. Every check calls it
// INVALID, and porcupine draws it in linearizability.html.
var brokenHistory = []string{
	`{"i":0,"t":0,"type":"info","op":"run","process":0,"client":0,"run":{"id":"hand","lock":"token","clients":2,"keys":1,"ttl_ms":1000,"seed":1,"started":"2024-01-01T00:00:00Z"}}`,
	`{"i":1,"t":1000,"type":"invoke","op":"acquire","id":1,"process":1,"client":1,"key":"k","ttl_ms":1000}`,
	`{"i":2,"t":2000,"type":"ok","op":"acquire","id":1,"process":1,"client":1,"key":"k","lease":"a","ttl_ms":1000}`,
	`{"i":3,"t":3000,"type":"invoke","op":"acquire","id":2,"process":2,"client":2,"key":"k","ttl_ms":1000}`,
	`{"i":4,"t":4000,"type":"ok","op":"acquire","id":2,"process":2,"client":2,"key":"k","lease":"b","ttl_ms":1000}`,
	`{"i":5,"t":5000,"type":"invoke","op":"release","id":3,"process":1,"client":1,"key":"k","lease":"a"}`,
	`{"i":6,"t":6000,"type":"ok","op":"release","id":3,"process":1,"client":1,"key":"k","lease":"a","deleted":true}`,
	`{"i":7,"t":7000,"type":"invoke","op":"release","id":4,"process":2,"client":2,"key":"k","lease":"b"}`,
	`{"i":8,"t":8000,"type":"ok","op":"release","id":4,"process":2,"client":2,"key":"k","lease":"b","deleted":false}`,
}

// edit returns brokenHistory with line i (0: the header) changed from old
// to new, as a file body.
func edit(i int, old, new string) string {
	ls := append([]string(nil), brokenHistory...)
	if !strings.Contains(ls[i], old) {
		panic("edit: line lacks " + old)
	}
	ls[i] = strings.Replace(ls[i], old, new, 1)
	return strings.Join(ls, "\n") + "\n"
}

// misspelt returns brokenHistory with the op of the given lines spelt
// "aquire": read leniently, client 2's acquire drops out and the double
// holder with it.
func misspelt(lines ...int) string {
	ls := append([]string(nil), brokenHistory...)
	for _, i := range lines {
		ls[i] = strings.Replace(ls[i], `"op":"acquire"`, `"op":"aquire"`, 1)
	}
	return strings.Join(ls, "\n") + "\n"
}

// TestCheckMalformedHistory: a history file is untrusted, and whatever is
// wrong with it must end in exit 2 and one line naming the problem, never in
// a verdict, least of all VALID. The unedited history is INVALID (exit 1),
// so each case below shows a defect that would otherwise hide the breakage
// or judge on numbers that are not there.
func TestCheckMalformedHistory(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, body, want string
	}{
		{"misspelt op on a completion", edit(4, `"op":"acquire"`, `"op":"aquire"`), `line 5: unknown op "aquire"`},
		{"misspelt op on both events", misspelt(3, 4), `line 4: unknown op "aquire"`},
		{"ttl overflowing nanoseconds", edit(2, `"ttl_ms":1000`, `"ttl_ms":9223372036854776`), "ttl_ms 9223372036854776 is out of range"},
		{"header ttl overflowing", edit(0, `"ttl_ms":1000`, `"ttl_ms":9223372036854775807`), "run header: ttl_ms"},
		{"time near the int64 maximum", edit(8, `"t":8000`, `"t":9223372036854775806`), "line 9: ok release: t 9223372036854775806 is out of range"},
		{"negative id", edit(1, `"id":1`, `"id":-1`), "line 2: invoke acquire: id -1"},
		{"negative process", edit(3, `"process":2`, `"process":-2`), "process -2 is out of range"},
		{"negative client", edit(3, `"client":2`, `"client":-2`), "client -2 is out of range"},
		{"empty key", edit(3, `"key":"k"`, `"key":""`), "line 4: invoke acquire: key empty on a lock operation"},
		{"completion before its invocation", strings.Join([]string{brokenHistory[0], brokenHistory[2], brokenHistory[1]}, "\n") + "\n",
			"line 2: ok completion of operation 1, which is not open"},
		{"deleted on an acquire", edit(4, `"lease":"b"`, `"lease":"b","deleted":true`), "line 5: ok acquire: deleted only allowed on release completions"},
		{"two values on a line", edit(5, `}`, `} {}`), "line 6: more than one JSON value"},
		{"broken line that is not the last", edit(5, `}`, ``), "line 6: not a JSON event"},
		{"empty file", "", "no operations: the history is empty"},
		{"header-only file", brokenHistory[0] + "\n", "no operations: the history has a run header and nothing else"},
		{"header and a torn line", brokenHistory[0] + "\n" + brokenHistory[1][:30], "no operations"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, fmt.Sprintf("h%d.jsonl", i))
			if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			code := run([]string{"check", "--expect", "valid", p}, &out, &errb)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitUsage, out.String(), errb.String())
			}
			msg := strings.TrimSuffix(errb.String(), "\n")
			if strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Fatalf("stderr %q: want one line mentioning %q", msg, tc.want)
			}
			if strings.Contains(out.String(), "verdict") {
				t.Fatalf("a verdict on a malformed history: %s", out.String())
			}
		})
	}
}

// TestCheckTornLastLine: a harness killed mid-write leaves a last line cut
// short; the check goes on without it and says how much it left out.
func TestCheckTornLastLine(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "history.jsonl")
	torn := brokenHistory[8][:40]
	body := strings.Join(brokenHistory[:8], "\n") + "\n" + torn
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"check", p}, &out, &errb); code != exitInvalid {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitInvalid, out.String(), errb.String())
	}
	want := fmt.Sprintf("history: left out torn last line 9 (%d bytes, cut mid-write); the verdict covers the 7 events before it", len(torn))
	if !strings.Contains(out.String(), want+"\n") {
		t.Fatalf("output lacks %q:\n%s", want, out.String())
	}
	if !strings.Contains(out.String(), "verdict: INVALID") {
		t.Fatalf("the lines before the torn one still decide:\n%s", out.String())
	}
}

// TestCheckWritesOnlyWithOut: re-checking a folder leaves it as it was;
// with --out, the files go there and the output names exactly those.
func TestCheckWritesOnlyWithOut(t *testing.T) {
	runDir := writeRun(t, t.TempDir(), brokenHistory)
	listing := func(dir string) []string {
		t.Helper()
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		return names
	}
	outDir := filepath.Join(t.TempDir(), "report")
	vis := filepath.Join(outDir, "linearizability.html")
	cases := []struct {
		name  string
		args  []string
		wrote []string // the files the check must write, and name, in outDir
	}{
		{"a run folder", []string{"check", runDir}, nil},
		{"its history file", []string{"check", filepath.Join(runDir, "history.jsonl")}, nil},
		{"with --out", []string{"check", "--out", outDir, runDir}, []string{"linearizability.html"}},
		{"with --out again", []string{"check", runDir, "--out", outDir}, []string{"linearizability.html"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(tc.args, &out, &errb); code != exitInvalid {
				t.Fatalf("exit %d, want %d\n%s%s", code, exitInvalid, out.String(), errb.String())
			}
			if got := listing(runDir); len(got) != 1 || got[0] != "history.jsonl" {
				t.Fatalf("the checked folder now holds %v", got)
			}
			if strings.Contains(out.String(), "summary.json") {
				t.Errorf("output names summary.json, which the check did not write:\n%s", out.String())
			}
			if tc.wrote == nil {
				if strings.Contains(out.String(), "wrote") || strings.Contains(out.String(), ".html") {
					t.Errorf("output names a file although none was written:\n%s", out.String())
				}
				return
			}
			if got := listing(outDir); strings.Join(got, ",") != strings.Join(tc.wrote, ",") {
				t.Errorf("--out folder holds %v, want %v", got, tc.wrote)
			}
			if !strings.Contains(out.String(), "wrote "+vis+"\n") {
				t.Errorf("output does not name %s:\n%s", vis, out.String())
			}
		})
	}
}

// writeRun makes dir a run folder holding only a history.jsonl of lines, as
// `torture check` leaves one, and returns dir.
func writeRun(t *testing.T, dir string, lines []string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeSpec writes a matrix spec into dir.
func writeSpec(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMatrixBadInput: a bad spec or flag is one line and exit 2, before
// anything runs.
func TestMatrixBadInput(t *testing.T) {
	dir := t.TempDir()
	good := writeSpec(t, dir, "good.yaml", "cells:\n  - {lock: token, expect: holds}\n")
	cases := []struct {
		name, spec string
		args       []string
		want       string
	}{
		{"unknown lock", "cells:\n  - {lock: nope, expect: holds}\n", nil, `cell 1 (nope-none): unknown lock "nope"`},
		{"unknown fault", "cells:\n  - {lock: token, faults: [meteor], expect: holds}\n", nil, `unknown fault "meteor"`},
		{"unknown field", "cells:\n  - {lock: token, expect: holds, colour: red}\n", nil, `cell 1: line 2: unknown setting "colour"`},
		{"no kind", "cells:\n  - {lock: token, expect: {breaks: {class: within-lease}}}\n", nil, "names no anomaly kind"},
		{"bad duration", "defaults: {ttl: 3 parsecs}\ncells:\n  - {lock: token, expect: holds}\n", nil, `defaults: line 1: ttl: want a duration like 300ms or 2s, got "3 parsecs"`},
		{"no spec", "", []string{"matrix"}, "want exactly one SPEC.yaml"},
		{"missing spec", "", []string{"matrix", filepath.Join(dir, "absent.yaml")}, "no such file"},
		{"bad seeds", "", []string{"matrix", good, "--seeds", "9..1"}, `seeds "9..1"`},
		{"bad cells", "", []string{"matrix", good, "--cells", "zzz", "--out", dir}, "matches no cell"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args == nil {
				args = []string{"matrix", writeSpec(t, dir, "bad.yaml", tc.spec), "--out", dir}
			}
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != exitUsage {
				t.Errorf("exit %d, want %d (stderr %q)", code, exitUsage, errb.String())
			}
			msg := strings.TrimRight(errb.String(), "\n")
			if strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Errorf("stderr %q: want one line mentioning %q", msg, tc.want)
			}
		})
	}
}

// TestMatrix runs a real two-cell matrix through the CLI: set-px with long
// work must show a foreign release, token without faults must hold. The
// same cells with a wrong expectation give exit 1. It needs redis-server.
func TestMatrix(t *testing.T) {
	clustertest.Need(t)
	dir := t.TempDir()
	const cells = `
defaults: {clients: 4, ttl: 200ms, hold: 5ms..20ms, duration: 2s, check-timeout: 30s}
cells:
  - name: set-px-overrun
    lock: set-px
    overrun: 0.3
    expect: {breaks: {kind: foreign-release}}
  - name: token-none
    lock: token
    expect: %s
`
	spec := writeSpec(t, dir, "m.yaml", strings.Replace(cells, "%s", "holds", 1))
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"matrix", spec, "--seeds", "3", "--out", out}, &stdout, &stderr); code != exitValid {
		t.Fatalf("exit %d, want 0\n%s%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"cell 1/2 set-px x overrun seed 3: invalid (foreign-release) as expected",
		"cell 2/2 token x none seed 3: valid as expected", "2 of 2 cells as expected"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	var m struct {
		AsExpected int `json:"as_expected"`
		Cells      []struct {
			Name       string  `json:"name"`
			Detected   int     `json:"detected"`
			Valid      int     `json:"valid"`
			Rate       float64 `json:"rate"`
			FirstMedMs float64 `json:"first_median_ms"`
			AsExpected bool    `json:"as_expected"`
			Seeds      []struct {
				Seed    int64  `json:"seed"`
				RunID   string `json:"run_id"`
				Dir     string `json:"dir"`
				Verdict string `json:"verdict"`
			} `json:"seeds"`
		} `json:"cells"`
	}
	b, err := os.ReadFile(filepath.Join(out, "matrix.json"))
	if err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatalf("matrix.json: %v\n%s", err, b)
	}
	if m.AsExpected != 2 || len(m.Cells) != 2 {
		t.Fatalf("matrix.json: %s", b)
	}
	br, ctl := m.Cells[0], m.Cells[1]
	if br.Detected != 1 || br.Rate != 1 || br.FirstMedMs <= 0 || br.Seeds[0].Verdict != "invalid" || br.Seeds[0].RunID != "set-px-overrun-seed3" {
		t.Errorf("breaking cell: %+v", br)
	}
	if ctl.Valid != 1 || !ctl.AsExpected || ctl.Seeds[0].Verdict != "valid" {
		t.Errorf("control cell: %+v", ctl)
	}
	for _, f := range []string{"matrix.md", "junit.xml", "runs/set-px-overrun-seed3/summary.json", "runs/token-none-seed3/history.jsonl"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}

	// token without faults promised to break: not as expected, exit 1.
	wrong := writeSpec(t, dir, "wrong.yaml", strings.Replace(cells, "%s", "{breaks: {kind: double-holder}}", 1))
	stdout.Reset()
	if code := run([]string{"matrix", wrong, "--seeds", "3", "--cells", "token-*", "--out", filepath.Join(dir, "out2")}, &stdout, &stderr); code != exitInvalid {
		t.Fatalf("wrong expectation: exit %d, want 1\n%s", code, stdout.String())
	}
	if !strings.Contains(stdout.String(), "NOT as expected") {
		t.Errorf("output does not say so:\n%s", stdout.String())
	}
}
