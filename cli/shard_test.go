package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/matrix"
)

// oneLineExit2 runs args and wants exit 2 with one line on stderr holding want.
func oneLineExit2(t *testing.T, args []string, want string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != exitUsage {
		t.Errorf("%q: exit %d, want %d (stderr %q)", args, code, exitUsage, errb.String())
	}
	msg := strings.TrimRight(errb.String(), "\n")
	if strings.Contains(msg, "\n") || !strings.Contains(msg, want) {
		t.Errorf("%q: stderr %q: want one line mentioning %q", args, msg, want)
	}
}

// TestShardAndMergeBadInput: a bad --shard, and a merge of nothing, of one
// shard twice, or of shards of different specs: one line, exit 2.
func TestShardAndMergeBadInput(t *testing.T) {
	dir := t.TempDir()
	spec := writeSpec(t, dir, "s.yaml", "seeds: 1..4\ncells:\n  - {lock: token, expect: holds}\n")
	other := writeSpec(t, dir, "o.yaml", "seeds: 1..4\ncells:\n  - {lock: token, expect: holds}\n# another\n")
	// Shards made without Redis: each run answered valid at once.
	valid := func(_ context.Context, o locktorture.Options) (*locktorture.Result, error) {
		return &locktorture.Result{RunID: o.RunID, Verdict: checker.Valid,
			Report: &checker.Report{Verdict: checker.Valid, Count: map[checker.Kind]int{}}}, nil
	}
	shard := func(path string, k int) string {
		s, err := matrix.Load(path, locktorture.Registries{})
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, fmt.Sprintf("%s-%d", filepath.Base(path), k))
		res, err := matrix.Run(context.Background(), s, matrix.Options{Shard: matrix.Shard{K: k, N: 2}, OutDir: out, Run: valid})
		if err != nil {
			t.Fatal(err)
		}
		if err := res.WriteFiles(out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	s1, s2, o2 := shard(spec, 1), shard(spec, 2), shard(other, 2)
	merged := filepath.Join(dir, "merged")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"matrix", spec, "--shard", "0/3"}, "--shard \"0/3\": K must be 1..3"},
		{[]string{"matrix", spec, "--shard", "4/3"}, "--shard \"4/3\": K must be 1..3"},
		{[]string{"matrix", spec, "--shard", "x"}, "--shard \"x\": want K/N"},
		{[]string{"matrix", spec, "--resume"}, "--resume needs --out"},
		{[]string{"matrix", "merge", "--out", merged}, "no shard folders"},
		{[]string{"matrix", "merge", s1, s2}, "--out DIR is required"},
		{[]string{"matrix", "merge", "--out", merged, s1, s1}, "given twice"},
		{[]string{"matrix", "merge", "--out", merged, s1, o2}, "different specs"},
		{[]string{"matrix", "merge", "--out", merged, s1}, "shard 2/2 missing"},
		{[]string{"matrix", "merge", "--out", merged, dir}, "has no matrix.json"},
	} {
		oneLineExit2(t, tc.args, tc.want)
	}
	if _, err := os.Stat(merged); err == nil {
		t.Errorf("a refused merge wrote %s", merged)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"matrix", "merge", "--out", merged, s2, s1}, &out, &errb); code != exitValid {
		t.Errorf("good merge: exit %d: %s%s", code, out.String(), errb.String())
	}
}

// fourCells is a short spec of four cells of three seeds, one of which
// ("token-wrong") promises a break that never comes.
const fourCells = `name: four
seeds: 1..3
defaults: {clients: 4, ttl: 200ms, hold: 5ms..20ms, duration: 700ms, check-timeout: 30s}
cells:
  - {name: set-px-overrun, lock: set-px, overrun: 0.3, expect: {breaks: {kind: foreign-release}}}
  - {name: token-overrun, lock: token, overrun: 0.3, expect: {breaks: {kind: double-holder, class: lease-outlived}}}
  - {name: token-none, lock: token, expect: holds}
  - {name: token-wrong, lock: token, expect: {breaks: {kind: foreign-release}}}
`

// readMatrix reads the matrix.json a matrix wrote into dir.
func readMatrix(t *testing.T, dir string) matrix.Result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "matrix.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m matrix.Result
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", filepath.Join(dir, "matrix.json"), err)
	}
	return m
}

// layout is what sharding must not move: the cells in their order and, per
// cell, its seeds and their run IDs.
func layout(m matrix.Result) string {
	var sb strings.Builder
	for _, c := range m.Cells {
		fmt.Fprintf(&sb, "%s:", c.Name)
		for _, s := range c.Seeds {
			fmt.Fprintf(&sb, " %d=%s", s.Seed, s.RunID)
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// outcomes is what each run of a matrix in dir found, by run ID: a merge
// must carry every shard's runs over as the shard judged them.
func outcomes(t *testing.T, dir string) map[string]string {
	t.Helper()
	runs := map[string]string{}
	for _, c := range readMatrix(t, dir).Cells {
		for _, s := range c.Seeds {
			runs[s.RunID] = fmt.Sprintf("%s seed %d: %s detected %v as expected %v", c.Name, s.Seed, s.Verdict, s.Detected, s.AsExpected)
			runDir := s.Dir
			if !filepath.IsAbs(runDir) {
				runDir = filepath.Join(dir, runDir) // matrix.json names runs inside its folder
			}
			if _, err := os.Stat(filepath.Join(runDir, "report.html")); err != nil {
				t.Errorf("%s: run %s has no report: %v", dir, s.RunID, err)
			}
		}
	}
	return runs
}

// TestMatrixShardsMerge runs a real four-cell, three-seed matrix once
// whole and once in three shards (side by side, as three CI runners would),
// merges the shards and finds the whole run's cells and seeds, every
// shard's runs as the shard judged them, and the failing cell's JUnit
// failures in the merged junit.xml. It needs redis-server.
func TestMatrixShardsMerge(t *testing.T) {
	clustertest.Need(t)
	dir := t.TempDir()
	spec := writeSpec(t, dir, "four.yaml", fourCells)
	whole := filepath.Join(dir, "whole")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"matrix", spec, "--out", whole, "--quiet"}, &stdout, &stderr); code != exitInvalid {
		t.Fatalf("whole matrix: exit %d, want 1\n%s%s", code, stdout.String(), stderr.String())
	}
	var wg sync.WaitGroup
	shards := make([]string, 3)
	for k := range shards {
		shards[k] = filepath.Join(dir, fmt.Sprintf("shard%d", k+1))
		wg.Go(func() {
			var out, errb bytes.Buffer
			code := run([]string{"matrix", spec, "--shard", fmt.Sprintf("%d/3", k+1), "--out", shards[k], "--quiet"}, &out, &errb)
			if code == exitUsage {
				t.Errorf("shard %d/3: exit %d\n%s%s", k+1, code, out.String(), errb.String())
			}
		})
	}
	wg.Wait()
	merged := filepath.Join(dir, "merged")
	stdout.Reset()
	if code := run(append([]string{"matrix", "merge", "--out", merged}, shards...), &stdout, &stderr); code != exitInvalid {
		t.Fatalf("merge: exit %d, want 1\n%s%s", code, stdout.String(), stderr.String())
	}
	// The shards hold the whole matrix's cells and seeds, each run once;
	// a run's verdict is the lock's under that run's timing, so the merge
	// is held to the shards' verdicts, not to the whole run's.
	m := readMatrix(t, merged)
	if got, want := layout(m), layout(readMatrix(t, whole)); got != want {
		t.Errorf("merged shards' cells and seeds:\n%s\nunsharded:\n%s", got, want)
	}
	fromShards := map[string]string{}
	for _, s := range shards {
		for id, o := range outcomes(t, s) {
			if _, dup := fromShards[id]; dup {
				t.Errorf("run %s is in two shards", id)
			}
			fromShards[id] = o
		}
	}
	got := outcomes(t, merged)
	if !maps.Equal(got, fromShards) {
		t.Errorf("merged runs:\n%v\nthe shards' runs:\n%v", got, fromShards)
	}
	ju, _ := os.ReadFile(filepath.Join(merged, "junit.xml"))
	if n := strings.Count(string(ju), `classname="token-wrong"`); n != 3 || !strings.Contains(string(ju), "expected foreign-release, got verdict valid") {
		t.Errorf("merged junit.xml: %d cases of token-wrong, failure present %v", n, strings.Contains(string(ju), "<failure"))
	}
	if want := fmt.Sprintf("%d of 4 cells as expected", m.AsExpected); m.AsExpected > 3 || !strings.Contains(stdout.String(), want) {
		t.Errorf("merge output (want %q, token-wrong never as expected):\n%s", want, stdout.String())
	}
	for _, c := range m.Cells {
		// A merged cell's tallies are its merged seeds' own.
		detected := 0
		for _, s := range c.Seeds {
			if s.Detected {
				detected++
			}
		}
		if c.Runs != len(c.Seeds) || c.Detected != detected {
			t.Errorf("merged %s: %d runs, %d detected; its seeds: %d runs, %d detected", c.Name, c.Runs, c.Detected, len(c.Seeds), detected)
		}
		if c.Name == "token-wrong" && (c.AsExpected || c.Runs != 3) {
			t.Errorf("merged token-wrong: %d runs, as expected %v; want 3 runs, not as expected", c.Runs, c.AsExpected)
		}
	}
}

// TestMatrixKilledResumes SIGKILLs a built torture in the middle of a
// matrix (after two runs finished), starts it again with --resume, and
// finds every run once: none of the finished ones again, none missing.
func TestMatrixKilledResumes(t *testing.T) {
	clustertest.Need(t)
	bin := buildTorture(t)
	dir := t.TempDir()
	spec := writeSpec(t, dir, "three.yaml", `seeds: 1..2
defaults: {clients: 3, ttl: 200ms, hold: 5ms..20ms, duration: 800ms, check-timeout: 30s}
cells:
  - {name: token-none, lock: token, expect: holds}
  - {name: set-px-overrun, lock: set-px, overrun: 0.3, expect: {breaks: {kind: foreign-release}}}
  - {name: watchdog-none, lock: watchdog, expect: holds}
`)
	out := filepath.Join(dir, "out")
	args := []string{"matrix", spec, "--out", out, "--resume"}
	done := killMidMatrix(t, bin, args, out)
	again, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, again)
	}
	checkResumed(t, out, string(again), done)
	// What the kill left running, torture clean removes.
	if out, err := exec.Command(bin, "clean").CombinedOutput(); err != nil {
		t.Errorf("clean: %v\n%s", err, out)
	}
}

// cellLine is the progress line of a finished run of TestMatrixKilledResumes's
// three-cell matrix: the cell's number and the seed.
var cellLine = regexp.MustCompile(`^cell (\d)/3 \S+ x \S+ seed (\d):`)

// killMidMatrix starts torture with args and SIGKILLs it in its third
// run, once two runs have printed, and returns the runs the matrix.json in
// out then holds: the two, or three if the third had just finished.
func killMidMatrix(t *testing.T, bin string, args []string, out string) map[string]bool {
	t.Helper()
	cmd := exec.Command(bin, args...)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pipe)
	finished := 0
	for finished < 2 && sc.Scan() {
		if cellLine.MatchString(sc.Text()) {
			finished++
		}
	}
	// Mid third run: the servers are up, the history half written.
	time.Sleep(300 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	var before matrix.Result
	b, err := os.ReadFile(filepath.Join(out, "matrix.json"))
	if err != nil || json.Unmarshal(b, &before) != nil {
		t.Fatalf("matrix.json after the kill: %v\n%s", err, b)
	}
	done := map[string]bool{}
	for _, c := range before.Cells {
		for _, s := range c.Seeds {
			done[s.RunID] = true
		}
	}
	if finished != 2 || len(done) < 2 || len(done) > 3 {
		t.Fatalf("killed after %d runs printed, matrix.json holds %v", finished, done)
	}
	return done
}

// checkResumed checks that the resumed matrix (its output again, its
// folder out) ran none of the runs done before again, and that its
// matrix.json holds every run once, every cell as expected.
func checkResumed(t *testing.T, out, again string, done map[string]bool) {
	t.Helper()
	names := []string{"token-none", "set-px-overrun", "watchdog-none"}
	rerun := 0
	for _, l := range strings.Split(again, "\n") {
		m := cellLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		rerun++
		if id := names[m[1][0]-'1'] + "-seed" + m[2]; done[id] {
			t.Errorf("resumed matrix ran %s again: %s", id, l)
		}
	}
	after := readMatrix(t, out)
	seen := map[string]int{}
	for _, c := range after.Cells {
		for _, s := range c.Seeds {
			seen[s.RunID]++
		}
	}
	for _, c := range names {
		for seed := 1; seed <= 2; seed++ {
			if id := fmt.Sprintf("%s-seed%d", c, seed); seen[id] != 1 {
				t.Errorf("run %s in the resumed matrix.json %d times", id, seen[id])
			}
		}
	}
	if len(seen) != 6 || rerun != 6-len(done) || after.AsExpected != 3 {
		t.Errorf("resumed: %d runs in matrix.json, %d run again after %d done, %d cells as expected\n%s",
			len(seen), rerun, len(done), after.AsExpected, again)
	}
}
