package cli

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestLockProgramErrors: through the command line, a lock program that
// breaks the protocol, or one put on a topology that cannot serve it, ends
// the run with one line and exit code 2.
func TestLockProgramErrors(t *testing.T) {
	for _, bin := range []string{"redis-server", "redis-sentinel"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skip(bin + " not installed")
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--lock", "exec:sh ../locks/program/testdata/not-json.sh"}, []string{"client ", `"granted!"`, "not a JSON object", "expected"}},
		{[]string{"--lock", "exec-token", "--topology", "sentinel"}, []string{"exec-token", "masters' addresses", "--topology single or redlock"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{"run", "--duration", "2s", "--ttl", "300ms", "--out", t.TempDir()}, tc.args...)
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != exitUsage {
				t.Fatalf("exit %d, want %d\n%s%s", code, exitUsage, out.String(), errb.String())
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
