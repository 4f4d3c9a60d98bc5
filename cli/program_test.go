package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/cluster/clustertest"
)

// TestLockProgramErrors: through the command line, a lock program that
// breaks the protocol ends the run with one line and exit code 2: among
// them one whose step's CLOCK_MONOTONIC reading lies before the harness
// wrote its request, or after the harness read the step, or is no integer.
func TestLockProgramErrors(t *testing.T) {
	clustertest.Need(t, "redis-server", "redis-sentinel")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--lock", "exec:sh ../locks/program/testdata/not-json.sh"}, []string{"client ", `"granted!"`, "not a JSON object", "expected"}},
		{[]string{"--lock", "exec:sh ../locks/program/testdata/bad-reading.sh 1"},
			[]string{"lock program bad-clock", "step 1 carries mono_ns 1, outside [", "after the harness wrote request 1, before it read the step"}},
		{[]string{"--lock", "exec:sh ../locks/program/testdata/bad-reading.sh 9000000000000000000"},
			[]string{"lock program bad-clock", "step 1 carries mono_ns 9000000000000000000, outside [", "before it read the step"}},
		{[]string{"--lock", `exec:sh ../locks/program/testdata/bad-reading.sh '"soon"'`},
			[]string{"lock program bad-clock", `step 1: mono_ns "\"soon\"" is not an integer`}},
		{[]string{"--lock", "exec:sh ../locks/program/testdata/bad-reading.sh 1.5"},
			[]string{"lock program bad-clock", `step 1: mono_ns "1.5" is not an integer`}},
		// node-redis 4.5.1 has no Sentinel client: its entry says what it
		// serves, and the run is refused before any server starts.
		{[]string{"--lock", "node-redis", "--topology", "sentinel"}, []string{"lock node-redis", "topology sentinel", "it serves single, redlock"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"run", "--duration", "2s", "--ttl", "300ms", "--out", dir}, tc.args...)
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != exitUsage {
				t.Fatalf("exit %d, want %d\n%s%s", code, exitUsage, out.String(), errb.String())
			}
			if strings.Contains(strings.Join(tc.args, " "), "node-redis") {
				if runs, _ := os.ReadDir(dir); len(runs) > 0 {
					t.Errorf("a refused run wrote %s", runs[0].Name())
				}
			}
			msg := strings.TrimRight(errb.String(), "\n")
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr %q does not say %q", msg, w)
				}
			}
		})
	}
}

// TestUntestedFailsGate: a run whose fault never took effect is not a pass
// under --expect valid: exit 1, and the output says what was not tested.
func TestUntestedFailsGate(t *testing.T) {
	clustertest.Need(t)
	args := []string{"run", "--lock", "token", "--faults", "crash-redis", "--target", "random", "--nemesis-interval", "1h",
		"--duration", "1s", "--ttl", "300ms", "--expect", "valid", "--out", t.TempDir()}
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != exitInvalid {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitInvalid, out.String(), errb.String())
	}
	for _, w := range []string{"verdict: UNTESTED", "not tested: fault crash-redis never took effect", "expected valid, got untested"} {
		if !strings.Contains(out.String()+errb.String(), w) {
			t.Errorf("output does not say %q:\n%s%s", w, out.String(), errb.String())
		}
	}
}
