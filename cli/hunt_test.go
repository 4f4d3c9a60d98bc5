package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/hunt"
	"github.com/locktorture/locktorture/summary"
)

func TestHuntBadInput(t *testing.T) {
	out := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"hunt"}, "no lock to hunt"},
		{[]string{"hunt", "--lock", "no-such-lock", "--out", out}, "no-such-lock"},
		{[]string{"hunt", "--lock", "token", "--budget", "soon"}, "budget"},
		{[]string{"hunt", "--lock", "token", "--budget", "0s", "--out", out}, "budget 0s"},
		{[]string{"hunt", "--lock", "token", "--strategy", "genetic"}, "strategy"},
		{[]string{"hunt", "--lock", "token", "--topology", "moon", "--out", out}, "moon"},
		{[]string{"hunt", "--lock", "token", "--faults", "meteor", "--out", out}, "meteor"},
		{[]string{"hunt", "--lock", "token", "--backend", "external"}, "runs on servers of its own"},
		{[]string{"hunt", "--lock", "token", "--ttl", "soon"}, "ttl"},
		{[]string{"hunt", "--lock", "token", "extra"}, "unexpected argument"},
	} {
		oneLineExit2(t, tc.args, tc.want)
	}
}

// huntFor runs torture hunt and reads its hunt.json.
func huntFor(t *testing.T, wantExit int, args ...string) *hunt.Result {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hunt")
	var out, errb bytes.Buffer
	args = append([]string{"hunt", "--out", dir, "--quiet"}, args...)
	if code := run(args, &out, &errb); code != wantExit {
		t.Fatalf("%q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, wantExit, out.String(), errb.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, hunt.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var r hunt.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"hunt.md", "hunt.html", "hunt.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	t.Logf("%s\n%s", out.String(), r.Closing())
	return &r
}

// rerunShows runs a command line the hunt printed, as a user pasting it
// would, n times, and counts the runs whose summary has the signature.
func rerunShows(t *testing.T, command string, sigs []hunt.Signature, n int) map[hunt.Signature]int {
	t.Helper()
	args := strings.Fields(command)
	if len(args) < 2 || args[0] != "torture" || args[1] != "run" {
		t.Fatalf("smallest command %q is not a torture run", command)
	}
	shown := map[hunt.Signature]int{}
	for i := range n {
		dir := t.TempDir()
		var out, errb bytes.Buffer
		full := append(args[1:], "--out", dir, "--run-id", fmt.Sprintf("rerun-%d", i), "--quiet")
		if code := run(full, &out, &errb); code == exitUsage {
			t.Fatalf("%q: exit 2: %s", full, errb.String())
		}
		s, err := summary.Read(filepath.Join(dir, fmt.Sprintf("rerun-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		for _, sig := range sigs {
			if s.Counts[sig.Kind()] == 0 {
				continue
			}
			if c := sig.Class(); c != "" && s.Classes[sig.Kind()][c] == 0 {
				continue
			}
			shown[sig]++
		}
	}
	return shown
}

// TestHuntSetPX: hunting set-px, which the docs say breaks by deleting the
// next holder's lock once work outlives the TTL, finds it without being
// told where to look (no fault: the load alone, which the hunt chooses),
// and every failure it reports found shows again from its smallest
// command, pasted as printed, in 4 of 5 reruns of its seed.
func TestHuntSetPX(t *testing.T) {
	clustertest.Need(t)
	r := huntFor(t, exitInvalid, "--lock", "set-px", "--topology", "single", "--faults", "none", "--budget", "75s", "--seed", "1", "--max-run", "4s")
	found := r.Found()
	if len(found) == 0 {
		t.Fatalf("the hunt found no failure of set-px: %s", r.Closing())
	}
	bySmallest := map[string][]hunt.Signature{}
	for _, f := range found {
		if f.Recurred < 4 || f.Reruns < f.Recurred {
			t.Errorf("%s reported found with %d of %d reruns", f.Signature, f.Recurred, f.Reruns)
		}
		bySmallest[f.Smallest] = append(bySmallest[f.Smallest], f.Signature)
	}
	if !slicesHas(found, "foreign-release") {
		t.Errorf("found %v; want set-px's foreign-release among them", sigsOf(found))
	}
	for cmd, sigs := range bySmallest {
		for sig, n := range rerunShows(t, cmd, sigs, 5) {
			if n < 4 {
				t.Errorf("%s showed in %d of 5 reruns of %s", sig, n, cmd)
			}
		}
	}
}

// TestHuntTokenFaultFree: the token lock without faults holds whatever
// load the hunt puts on it (its lease-outlived double holders under long
// work are the TTL hazard, reported apart), and the hunt says it tested
// something.
func TestHuntTokenFaultFree(t *testing.T) {
	clustertest.Need(t)
	r := huntFor(t, exitValid, "--lock", "token", "--topology", "single", "--faults", "none", "--budget", "40s", "--seed", "2",
		"--max-run", "4s", "--expect", "holds")
	if r.Verdict() != "holds" || len(r.Untested) > 0 {
		t.Errorf("verdict %s, untested %v", r.Verdict(), r.Untested)
	}
	ran := 0
	for _, tr := range r.Trials {
		if !tr.Refused {
			ran++
		}
	}
	if ran < 4 {
		t.Errorf("only %d runs in 40s", ran)
	}
	for _, f := range r.Failures {
		if !f.Hazard && f.Status == hunt.StatusFound {
			t.Errorf("token fault-free: %s found (%s)", f.Signature, f.Smallest)
		}
	}
}

func slicesHas(fs []*hunt.Failure, kind string) bool {
	for _, f := range fs {
		if string(f.Signature.Kind()) == kind {
			return true
		}
	}
	return false
}

func sigsOf(fs []*hunt.Failure) []hunt.Signature {
	var out []hunt.Signature
	for _, f := range fs {
		out = append(out, f.Signature)
	}
	return out
}
