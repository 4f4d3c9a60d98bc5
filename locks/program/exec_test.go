package program

import (
	"slices"
	"testing"
)

// TestExecSplitsLikeAShell: exec:COMMAND ARGS... is split into words as a
// shell would, leading NAME=value words are the program's environment, and
// a line that cannot be split, or has no command, is refused.
func TestExecSplitsLikeAShell(t *testing.T) {
	t.Setenv("LT_TEST_DIR", "/opt/my lock")
	for _, c := range []struct {
		name string
		argv []string
		env  []string
		bad  bool
	}{
		{name: "exec:python3 lock.py --ttl 3", argv: []string{"python3", "lock.py", "--ttl", "3"}},
		{name: `exec:  sh -c 'echo "a b"'  `, argv: []string{"sh", "-c", `echo "a b"`}},
		{name: `exec:run\ me "two words"`, argv: []string{"run me", "two words"}},
		{name: `exec:"$LT_TEST_DIR/bin"`, argv: []string{"/opt/my lock/bin"}},
		{name: "exec:$LT_TEST_DIR/bin", argv: []string{"/opt/my", "lock/bin"}}, // split, as sh does
		{name: "exec:PYTHONUNBUFFERED=1 python3 x.py", argv: []string{"python3", "x.py"}, env: []string{"PYTHONUNBUFFERED=1"}},
		{name: `exec:A=1 _B2='x y' C= lock A=2`, argv: []string{"lock", "A=2"}, env: []string{"A=1", "_B2=x y", "C="}},
		{name: "exec:D=$LT_TEST_DIR/bin lock", argv: []string{"lock"}, env: []string{"D=/opt/my lock/bin"}}, // not split, as sh does
		{name: `exec:"A=1" lock`, argv: []string{"A=1", "lock"}},                                            // quoted: a command, not an assignment
		{name: "exec:1A=x lock", argv: []string{"1A=x", "lock"}},
		{name: "exec:=x lock", argv: []string{"=x", "lock"}},
		{name: "exec:", bad: true},
		{name: "exec:   ", bad: true},
		{name: "exec:A=1 B=2", bad: true},
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
		if !slices.Equal(cmd.Argv, c.argv) || !slices.Equal(cmd.Env, c.env) {
			t.Errorf("%q: argv %q env %q, want %q %q", c.name, cmd.Argv, cmd.Env, c.argv, c.env)
		}
	}
}
