package cli

import "testing"

// TestShareBadInput: --share outside 1..clients is one line and exit 2,
// before anything runs.
func TestShareBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"zero", []string{"run", "--share", "0"}, "--share 0: want 1..4"},
		{"negative", []string{"run", "--share", "-2"}, "--share -2"},
		{"more than clients", []string{"run", "--clients", "3", "--share", "4"}, "--share 4: want 1..3"},
		{"not a number", []string{"run", "--share", "two"}, "share"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { oneLineExit2(t, c.args, c.want) })
	}
}
