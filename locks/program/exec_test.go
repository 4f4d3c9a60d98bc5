package program

import (
	"slices"
	"testing"
)

// TestExecSplitsLikeAShell: exec:COMMAND ARGS... is split into words as a
// shell would, and a line that cannot be split, or is empty, is refused.
func TestExecSplitsLikeAShell(t *testing.T) {
	t.Setenv("LT_TEST_DIR", "/opt/my lock")
	for _, c := range []struct {
		name string
		argv []string
		bad  bool
	}{
		{name: "exec:python3 lock.py --ttl 3", argv: []string{"python3", "lock.py", "--ttl", "3"}},
		{name: `exec:  sh -c 'echo "a b"'  `, argv: []string{"sh", "-c", `echo "a b"`}},
		{name: `exec:run\ me "two words"`, argv: []string{"run me", "two words"}},
		{name: `exec:"$LT_TEST_DIR/bin"`, argv: []string{"/opt/my lock/bin"}},
		{name: "exec:$LT_TEST_DIR/bin", argv: []string{"/opt/my", "lock/bin"}}, // split, as sh does
		{name: "exec:", bad: true},
		{name: "exec:   ", bad: true},
		{name: `exec:sh 'unclosed`, bad: true},
	} {
		e, err := Exec(c.name)
		if c.bad {
			if err == nil {
				t.Errorf("%q: accepted, want an error", c.name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.name, err)
			continue
		}
		if e.Name != c.name || e.Probe == nil || e.New == nil {
			t.Errorf("%q: entry %+v", c.name, e)
		}
		cmd, _ := parseExec(c.name)
		if !slices.Equal(cmd.Argv, c.argv) {
			t.Errorf("%q: argv %q, want %q", c.name, cmd.Argv, c.argv)
		}
	}
}
