package matrix

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
)

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Shard
		err  string
	}{
		{"1/3", Shard{1, 3}, ""},
		{" 3/3 ", Shard{3, 3}, ""},
		{"1/1", Shard{1, 1}, ""},
		{"0/3", Shard{}, "K must be 1..3"},
		{"4/3", Shard{}, "K must be 1..3"},
		{"-1/3", Shard{}, "K must be 1..3"},
		{"1/0", Shard{}, "N must be"},
		{"x", Shard{}, "want K/N"},
		{"3", Shard{}, "want K/N"},
		{"a/b", Shard{}, "want K/N"},
	} {
		got, err := ParseShard(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: %v, %v; want %v, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestShardsPartitionAndBalance: for every N the shards are disjoint,
// cover the plan, come out the same when computed again, and are balanced
// by expected time: no shard expects more than another plus its longest run.
func TestShardsPartitionAndBalance(t *testing.T) {
	spec, err := Parse(strings.NewReader(`
seeds: 1..7
defaults: {duration: 2s}
cells:
  - {name: long-control, lock: token, duration: 30s, expect: holds}
  - {name: breaks, lock: token, faults: [pause-client], expect: {breaks: {kind: double-holder}}}
  - {name: control, lock: token, expect: holds}
  - {name: few, lock: set-px, overrun: 0.2, seeds: [3, 9], expect: {breaks: {kind: foreign-release}}}
`), "s", locktorture.Registries{})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := plan(spec, spec.Cells, Options{})
	if len(all) != 23 {
		t.Fatalf("plan of %d runs, want 23", len(all))
	}
	if long, brk := all[0].cost, all[7].cost; long <= brk || brk >= all[14].cost {
		t.Errorf("costs: control 30s %v, breaking 2s %v, control 2s %v", long, brk, all[14].cost)
	}
	for n := 1; n <= 30; n++ {
		seen := map[plannedRun]int{}
		var loads []time.Duration
		var longest time.Duration
		for k := 1; k <= n; k++ {
			part := Shard{k, n}.pick(all)
			if again := (Shard{k, n}).pick(all); !slices.Equal(part, again) {
				t.Fatalf("shard %d/%d differs when computed again", k, n)
			}
			var load time.Duration
			for _, r := range part {
				seen[r]++
				load += r.cost
				longest = max(longest, r.cost)
			}
			loads = append(loads, load)
		}
		for _, r := range all {
			if seen[r] != 1 {
				t.Fatalf("N=%d: run %d/%d in %d shards", n, r.cell, r.seed, seen[r])
			}
		}
		if len(seen) != len(all) {
			t.Fatalf("N=%d: shards hold %d runs, the plan %d", n, len(seen), len(all))
		}
		if d := slices.Max(loads) - slices.Min(loads); d > longest {
			t.Errorf("N=%d: loads %v differ by %v, more than the longest run %v", n, loads, d, longest)
		}
	}
}

// mergeSpec is scriptedSpec with a fourth cell: "wrong" promises a break
// that never comes, so its JUnit cases fail.
const mergeSpec = scriptedSpec + `  - name: wrong
    lock: token
    expect: {breaks: {kind: foreign-release}}
`

// outcome answers a run from its id alone, the same in every process, and
// leaves a run folder as a real run does.
func outcome(_ context.Context, o locktorture.Options) (*locktorture.Result, error) {
	cell, seed, _ := strings.Cut(o.RunID, "-seed")
	var r *locktorture.Result
	switch {
	case cell == "breaks":
		r = result(checker.Invalid, dh(checker.ClassWithinLease, 100+int64(seed[0]-'0')*7))
	case cell == "flaky" && seed == "2":
		r = result(checker.Invalid, dh(checker.ClassLeaseOutlived, 40), dh(checker.ClassLeaseOutlived, 90))
	default:
		r = result(checker.Valid)
	}
	r.RunID = o.RunID
	if o.OutDir != "" {
		r.Dir = filepath.Join(o.OutDir, o.RunID)
		if err := os.MkdirAll(r.Dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(r.Dir, "report.html"), []byte(o.RunID), 0o644); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func runMatrix(t *testing.T, spec *Spec, out string, opts Options) *Result {
	t.Helper()
	opts.OutDir = out
	if opts.Run == nil {
		opts.Run = outcome
	}
	res, err := Run(context.Background(), spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.WriteFiles(out); err != nil {
		t.Fatal(err)
	}
	return res
}

// comparable is matrix.json with the timings and the output folder taken out.
func comparable(t *testing.T, dir string) string {
	t.Helper()
	r, err := readResult(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	r.Started, r.DurationMs = time.Time{}, 0
	for i := range r.Cells {
		for j := range r.Cells[i].Seeds {
			s := &r.Cells[i].Seeds[j]
			s.DurationMs = 0
			if filepath.IsAbs(s.Dir) {
				rel, err := filepath.Rel(dir, s.Dir)
				if err != nil {
					t.Fatal(err)
				}
				s.Dir = rel
			}
		}
	}
	b, _ := json.MarshalIndent(r, "", " ")
	return string(b)
}

// TestShardMergeEqualsUnsharded: the spec in three shards, merged, is the
// unsharded matrix: the same matrix.json (cells, seeds, verdicts, counts),
// the failing cell's JUnit failures in the merged junit.xml, every run
// folder reachable from the merged index.html.
func TestShardMergeEqualsUnsharded(t *testing.T) {
	spec, err := Parse(strings.NewReader(mergeSpec), "s", locktorture.Registries{})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	whole := runMatrix(t, spec, filepath.Join(root, "whole"), Options{})
	var shards []string
	total := 0
	for k := 1; k <= 3; k++ {
		dir := filepath.Join(root, fmt.Sprintf("shard%d", k))
		part := runMatrix(t, spec, dir, Options{Shard: Shard{k, 3}})
		if part.Runs == 0 || part.Runs == 12 {
			t.Errorf("shard %d/3 has %d of 12 runs", k, part.Runs)
		}
		total += part.Runs
		shards = append(shards, dir)
	}
	if total != 12 {
		t.Errorf("the shards hold %d runs, want 12", total)
	}
	out := filepath.Join(root, "merged")
	merged, err := Merge(shards, out)
	if err != nil {
		t.Fatal(err)
	}
	if err := merged.WriteFiles(out); err != nil {
		t.Fatal(err)
	}
	if got, want := comparable(t, out), comparable(t, filepath.Join(root, "whole")); got != want {
		t.Errorf("merged matrix.json differs from the unsharded one:\n%s\nwant\n%s", got, want)
	}
	if merged.OK() || merged.AsExpected != whole.AsExpected || merged.AsExpected != 2 {
		t.Errorf("merged: %d as expected, unsharded %d", merged.AsExpected, whole.AsExpected)
	}
	ju, _ := os.ReadFile(filepath.Join(out, JUnitFile))
	if n := strings.Count(string(ju), `<failure message="expected foreign-release, got verdict valid"`); n != 3 {
		t.Errorf("merged junit.xml has %d failures of the wrong cell, want 3:\n%s", n, ju)
	}
	page, _ := os.ReadFile(filepath.Join(out, IndexFile))
	for _, c := range merged.Cells {
		for _, s := range c.Seeds {
			link := "runs/" + s.RunID + "/report.html"
			if !strings.Contains(string(page), `href="`+link+`"`) {
				t.Errorf("index.html does not link %s", link)
			}
			if b, err := os.ReadFile(filepath.Join(out, link)); err != nil || string(b) != s.RunID {
				t.Errorf("%s: %v %q", link, err, b)
			}
		}
	}
}

// TestMergeRefuses: what cannot be merged is one line naming the problem.
func TestMergeRefuses(t *testing.T) {
	spec, err := Parse(strings.NewReader(mergeSpec), "s", locktorture.Registries{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := Parse(strings.NewReader(mergeSpec+"# changed\n"), "s", locktorture.Registries{})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := func(name string) string { return filepath.Join(root, name) }
	for k := 1; k <= 3; k++ {
		runMatrix(t, spec, dir(fmt.Sprint("s", k)), Options{Shard: Shard{k, 3}})
	}
	runMatrix(t, other, dir("other2"), Options{Shard: Shard{2, 3}})
	runMatrix(t, spec, dir("build2"), Options{Shard: Shard{2, 3}, Build: "another build"})
	runMatrix(t, spec, dir("seeds2"), Options{Shard: Shard{2, 3}, Seeds: Seeds{1, 2}})
	runMatrix(t, spec, dir("half2"), Options{Shard: Shard{2, 2}})
	if err := os.CopyFS(dir("copy1"), os.DirFS(dir("s1"))); err != nil {
		t.Fatal(err)
	}
	// s3b lost a run: a seed taken out of its matrix.json.
	if err := os.CopyFS(dir("s3b"), os.DirFS(dir("s3"))); err != nil {
		t.Fatal(err)
	}
	r, _ := readResult(filepath.Join(dir("s3"), JSONFile))
	lost := r.Cells[0].Seeds[0].RunID
	r.Cells[0].Seeds = r.Cells[0].Seeds[1:]
	f, _ := os.Create(filepath.Join(dir("s3b"), JSONFile))
	r.WriteJSON(f)
	f.Close()
	if err := os.MkdirAll(dir("empty"), 0o755); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		dirs []string
		want string
	}{
		{"nothing", nil, "no shard folders"},
		{"one shard twice", []string{dir("s1"), dir("s2"), dir("s1")}, "given twice"},
		{"a copy of a shard", []string{dir("s1"), dir("copy1"), dir("s2"), dir("s3")}, "shard 1/3 given twice"},
		{"a shard missing", []string{dir("s1"), dir("s3")}, "shard 2/3 missing"},
		{"different specs", []string{dir("s1"), dir("other2"), dir("s3")}, "different specs"},
		{"different builds", []string{dir("s1"), dir("build2"), dir("s3")}, "different builds (" + BuildID() + " and another build)"},
		{"different seeds", []string{dir("s1"), dir("seeds2"), dir("s3")}, "plan different cells or seeds"},
		{"different N", []string{dir("s1"), dir("half2")}, "is shard 2/2 but another folder is a shard of 3"},
		{"a run missing", []string{dir("s1"), dir("s2"), dir("s3b")}, "run " + lost + " missing"},
		{"not a matrix", []string{dir("empty")}, "has no matrix.json"},
		{"the output among the inputs", []string{dir("s1"), dir("s2"), dir("s3"), dir("out")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := dir("out")
			if tc.want == "" {
				tc.want = "is one of the shard folders"
			}
			_, err := Merge(tc.dirs, out)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("merge: %v; want one line with %q", err, tc.want)
			}
		})
	}
}

// TestResumeRunsOnlyWhatIsMissing: a matrix cut off in its fifth run
// leaves a matrix.json (rewritten after every run, readable each time)
// with four runs; resumed, it runs the other eight and nothing twice, and
// ends equal to a matrix that was never cut.
func TestResumeRunsOnlyWhatIsMissing(t *testing.T) {
	spec, err := Parse(strings.NewReader(mergeSpec), "s", locktorture.Registries{})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	out := filepath.Join(root, "m")
	before := interruptMatrix(t, spec, out)
	var ran []string
	opts := Options{OutDir: out, Resume: true, Run: func(ctx context.Context, o locktorture.Options) (*locktorture.Result, error) {
		ran = append(ran, o.RunID)
		return outcome(ctx, o)
	}}
	res, err := Run(context.Background(), spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.WriteFiles(out); err != nil {
		t.Fatal(err)
	}
	if len(ran) != 8 || ran[0] != before[4] || slices.ContainsFunc(ran, func(id string) bool { return slices.Contains(before[:4], id) }) {
		t.Errorf("resumed runs %v after %v", ran, before)
	}
	if temps, _ := filepath.Glob(filepath.Join(out, ".matrix.json.*")); len(temps) > 0 {
		t.Errorf("temp files left: %v", temps)
	}
	whole := filepath.Join(root, "whole")
	runMatrix(t, spec, whole, Options{})
	if got, want := comparable(t, out), comparable(t, whole); got != want {
		t.Errorf("resumed matrix.json differs from an uncut one:\n%s\nwant\n%s", got, want)
	}

	refuseForeignResume(t, spec, out)
}

// interruptMatrix runs spec into out until a cancel in its fifth run,
// checking that matrix.json holds every run done after each one, and
// returns the runs it started; it leaves a temp file behind as a kill
// mid-write would.
func interruptMatrix(t *testing.T, spec *Spec, out string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var ran []string
	cut := func(ctx context.Context, o locktorture.Options) (*locktorture.Result, error) {
		ran = append(ran, o.RunID)
		if len(ran) == 5 {
			cancel() // a CI timeout's SIGTERM in the fifth run
			r, err := outcome(ctx, o)
			r.Interrupted = true
			return r, err
		}
		return outcome(ctx, o)
	}
	checkpoints := 0
	opts := Options{OutDir: out, Run: cut, Progress: func(p Progress) {
		if p.Seed == nil {
			return
		}
		r, err := readResult(filepath.Join(out, JSONFile))
		if err != nil {
			t.Fatalf("after run %s: %v", p.Seed.RunID, err)
		}
		n := 0
		for _, c := range r.Cells {
			n += len(c.Seeds)
		}
		if n != p.Done {
			t.Errorf("after %d runs matrix.json holds %d", p.Done, n)
		}
		checkpoints++
	}}
	res, err := Run(ctx, spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || checkpoints != 5 {
		t.Fatalf("interrupted %v after %d checkpoints", res.Interrupted, checkpoints)
	}
	// A temp file a kill left mid-write is cleared away.
	if err := os.WriteFile(filepath.Join(out, ".matrix.json.123"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ran
}

// refuseForeignResume checks that resuming into out, the folder of spec's
// matrix, is refused for another spec, shard, plan or no folder at all.
func refuseForeignResume(t *testing.T, spec *Spec, out string) {
	t.Helper()
	// Resuming into another matrix's folder is refused.
	other, _ := Parse(strings.NewReader(mergeSpec+"# changed\n"), "s", locktorture.Registries{})
	for _, tc := range []struct {
		spec *Spec
		opts Options
		want string
	}{
		{other, Options{OutDir: out, Resume: true, Run: outcome}, "different specs"},
		{spec, Options{OutDir: out, Resume: true, Run: outcome, Shard: Shard{1, 2}}, "holds shard none (the whole matrix), not 1/2"},
		{spec, Options{OutDir: out, Resume: true, Run: outcome, Seeds: Seeds{1}}, "plan different cells"},
		{spec, Options{Resume: true, Run: outcome}, "needs --out"},
	} {
		if _, err := Run(context.Background(), tc.spec, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("resume: %v, want %q", err, tc.want)
		}
	}
}
