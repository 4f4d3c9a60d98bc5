package locktorture_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestTreeHoldsNoOutput keeps binaries and run output out of git: no tracked
// file over 1 MB, and nothing tracked inside a run folder under any
// results/ directory (its README and published *.md tables may stay).
func TestTreeHoldsNoOutput(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	runFile := regexp.MustCompile(`(^|/)results/[^/]+/`)
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if f == "" {
			continue
		}
		if runFile.MatchString(f) {
			t.Errorf("%s: a run folder is tracked", f)
		}
		st, err := os.Stat(f)
		if err != nil {
			continue // deleted in the work tree, not yet in the index
		}
		if st.Size() > 1<<20 {
			t.Errorf("%s: %d bytes tracked (over 1 MB: binaries and run output do not belong in git)", f, st.Size())
		}
	}
}
