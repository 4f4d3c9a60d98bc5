package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
	backwards := write("backwards.jsonl", `{"i":0,"t":5,"type":"invoke","op":"acquire","id":1,"process":1,"client":1}`+"\n"+
		`{"i":1,"t":4,"type":"ok","op":"acquire","id":1,"process":1,"client":1}`+"\n")
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
		{[]string{"run", "--nemesis", "meteor"}, `unknown nemesis "meteor"`},
		{[]string{"run", "--topology", "mesh"}, `unknown topology "mesh"`},
		{[]string{"run", "--persistence", "sometimes"}, "-persistence"},
		{[]string{"run", "stray"}, `unexpected argument "stray"`},
		{[]string{"run", "--run-id", "../escape"}, "run id"},
		{[]string{"check"}, "want exactly one"},
		{[]string{"check", filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"check", garbage}, "line 1"},
		{[]string{"check", unpaired}, "not open"},
		{[]string{"check", backwards}, "goes back"},
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

// TestRunCheckAndGate runs a breaking lock through the CLI, re-checks its
// folder, and gates on --expect; it needs redis-server.
func TestRunCheckAndGate(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
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
