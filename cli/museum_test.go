package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/locktorture/locktorture"
)

// TestMuseumTakesMatrixFlags: torture museum takes the flags of torture
// matrix that make sense for it, defined once for both, and passes them on
// to every exhibit's matrix; a bad one is one line and exit 2.
func TestMuseumTakesMatrixFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	o, _, code, stop := museumOptions([]string{"--exhibits", "redsync-61", "--cells", "buggy-*,fixed-unlock", "--full-runs",
		"--seeds", "1..3", "--shrink", "--shrink-budget", "30s", "--out", "/tmp/m", "mybugs"}, &stdout, &stderr)
	if stop {
		t.Fatalf("stopped with exit %d: %s", code, stderr.String())
	}
	want := []string{"--cells", "buggy-*,fixed-unlock", "--full-runs", "--shrink", "--shrink-budget", "30s"}
	if !slices.Equal(o.Matrix, want) || o.Seeds != "1..3" || o.Dir != "mybugs" || o.Out != "/tmp/m" || !slices.Equal(o.Exhibits, []string{"redsync-61"}) {
		t.Errorf("options %+v, want matrix flags %q", o, want)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--seeds", "5..1"}, `seeds "5..1"`},
		{[]string{"--cells", "["}, `--cells "[": bad pattern`},
		{[]string{"--shard", "1/2"}, "shard"},
		{[]string{"a", "b"}, "at most one museum folder"},
	} {
		stdout.Reset()
		stderr.Reset()
		if _, _, code, stop := museumOptions(tc.args, &stdout, &stderr); !stop || code != exitUsage {
			t.Errorf("%q: exit %d (stop %v), want %d", tc.args, code, stop, exitUsage)
		}
		if msg := strings.TrimSpace(stderr.String()); strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
			t.Errorf("%q: %q, want one line saying %q", tc.args, msg, tc.want)
		}
	}
	// Both commands define the shared flags the same way.
	stdout.Reset()
	museumOptions([]string{"-h"}, &stdout, &stderr)
	help := stdout.String()
	stdout.Reset()
	cmdMatrix([]string{"-h"}, &stdout, &stderr, locktorture.Registries{})
	for _, f := range []string{"-cells", "-full-runs", "-shrink-budget"} {
		if !strings.Contains(help, f) || !strings.Contains(stdout.String(), f) {
			t.Errorf("flag %s missing from museum or matrix help", f)
		}
	}
}
