package shrink

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
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/summary"
)

// writeRun writes a run folder's summary.json as a run would.
func writeRun(t *testing.T, dir string, run *history.RunInfo, anomalies ...checker.Anomaly) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := summary.Summary{Run: run, Verdict: checker.Valid, Counts: map[checker.Kind]int{}, Anomalies: anomalies}
	for _, a := range anomalies {
		s.Counts[a.Kind]++
		s.Verdict = checker.Invalid
	}
	b, _ := json.Marshal(s)
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func header() *history.RunInfo {
	return &history.RunInfo{ID: "orig", Lock: "token", Workload: "mutex", Topology: "single", Clients: 8, Keys: 4,
		TTLMillis: 200, Seed: 7, Params: map[string]string{"duration": "8s", "hold": "5ms..20ms",
			"nemesis": "latency,pause-client,crash-client", "overrun": "0.2", "abandon": "0", "nemesis_interval": "1s"}}
}

var (
	within  = checker.Anomaly{Kind: checker.KindDoubleHolder, Class: checker.ClassWithinLease, Severity: checker.SeveritySafety, StartNS: 9e8}
	outlive = checker.Anomaly{Kind: checker.KindDoubleHolder, Class: checker.ClassLeaseOutlived, Severity: checker.SeveritySafety, StartNS: 5e8}
	stuck   = checker.Anomaly{Kind: checker.KindStuckLock, Severity: checker.SeverityLiveness, StartNS: 1e8}
)

// lockModel answers a run as a lock would that gives two holders within a
// lease only with 3 clients or more, pause-client among the faults, and a
// run that lasts half a second past the first fault (one nemesis interval); with 2 keys it shows it once, not on the
// rerun (a flaky candidate).
type lockModel struct {
	calls map[string]int
	runs  []locktorture.Options
}

func (m *lockModel) run(_ context.Context, o locktorture.Options) (*locktorture.Result, error) {
	m.runs = append(m.runs, o)
	key := fmt.Sprint(o.Clients, o.Keys, o.Duration, o.Faults, o.Overrun)
	m.calls[key]++
	rep := &checker.Report{Verdict: checker.Valid, Count: map[checker.Kind]int{}}
	shows := o.Clients >= 3 && o.Duration >= o.NemesisInterval+500*time.Millisecond && slices.Contains(o.Faults, "pause-client")
	if o.Keys == 2 && m.calls[key] > 1 {
		shows = false
	}
	if shows {
		rep.Anomalies = []checker.Anomaly{outlive, within}
	} else if o.Overrun > 0 {
		rep.Anomalies = []checker.Anomaly{outlive}
	}
	for _, a := range rep.Anomalies {
		rep.Count[a.Kind]++
		rep.Verdict = checker.Invalid
	}
	return &locktorture.Result{Verdict: rep.Verdict, Report: rep}, nil
}

// TestShrinkSearch follows the greedy search on a modelled lock: it ends at
// the smallest run that shows the anomaly (3 clients, 1 key, the one fault
// that matters, sooner, 1 s, no overrun), every candidate a run with the original
// seed, each kept only when its rerun showed the anomaly too.
func TestShrinkSearch(t *testing.T) {
	dir := t.TempDir()
	run := writeRun(t, filepath.Join(dir, "orig"), header(), within)
	m := &lockModel{calls: map[string]int{}}
	var lines []string
	res, err := Shrink(context.Background(), run, Options{Run: m.run, Progress: func(c Candidate) {
		lines = append(lines, fmt.Sprintf("%s kept=%v shown=%v", c.Step, c.Kept, c.Shown))
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Reproduced || res.Target != (Target{checker.KindDoubleHolder, checker.ClassWithinLease}) || res.Seed != 7 {
		t.Fatalf("reproduced %v, target %v, seed %d", res.Reproduced, res.Target, res.Seed)
	}
	want := Size{Clients: 3, Keys: 1, Duration: "1s", Faults: []string{"pause-client"}}
	if got := res.To; got.Clients != want.Clients || got.Keys != want.Keys || got.Duration != want.Duration ||
		!slices.Equal(got.Faults, want.Faults) || got.Overrun != 0 {
		t.Errorf("smallest %v, want %v\n%s", got, want, strings.Join(lines, "\n"))
	}
	if res.From.Clients != 8 || res.From.Duration != "8s" || len(res.From.Faults) != 3 {
		t.Errorf("from %v", res.From)
	}
	cmd := strings.Join(res.Smallest, " ")
	for _, part := range []string{"torture run --lock token", "--clients 3", "--keys 1", "--seed 7", "--duration 1s", "--faults pause-client", "--nemesis-interval 250ms", "--nemesis-duration 1s"} {
		if !strings.Contains(cmd, part) {
			t.Errorf("smallest command %q lacks %q", cmd, part)
		}
	}
	if strings.Contains(cmd, "--overrun") {
		t.Errorf("smallest command keeps the overrun: %s", cmd)
	}
	for _, o := range m.runs {
		if o.Seed != 7 || o.StopWhen == nil || o.StopWhen(outlive) || !o.StopWhen(within) {
			t.Fatalf("a candidate ran with seed %d or without stopping at its anomaly alone", o.Seed)
		}
	}
	// The order is the documented one, and what was tried once is not tried again.
	steps := strings.Join(lines, "\n")
	for _, w := range []string{
		"the original, rerun kept=true", "clients 8 -> 4 kept=true", "clients 4 -> 2 kept=false", "clients 4 -> 3 kept=true",
		"keys 4 -> 2 kept=false shown=true", "keys 4 -> 3 kept=true", "keys 3 -> 1 kept=true",
		"duration 8s -> 4s kept=true", "duration 2s -> 1s kept=false", "duration 2s -> 1.5s kept=true",
		"drop fault latency kept=true", "drop fault pause-client kept=false", "drop fault crash-client kept=true",
		"nemesis-interval 1s -> 500ms kept=true", "nemesis-interval 500ms -> 250ms kept=true", "duration 1.5s -> 1s kept=true",
		"overrun 0.2 -> 0 kept=true",
	} {
		if !strings.Contains(steps, w) {
			t.Errorf("no step %q in\n%s", w, steps)
		}
	}
	if i, j := strings.Index(steps, "clients 8 -> 4"), strings.Index(steps, "keys 4 -> 2"); i > j {
		t.Errorf("keys before clients:\n%s", steps)
	}
	seen := map[string]bool{}
	for _, c := range res.Candidates {
		k := strings.Join(c.Args, " ")
		if seen[k] {
			t.Errorf("candidate tried twice: %s", k)
		}
		seen[k] = true
	}
	var back Result
	b, err := os.ReadFile(filepath.Join(dir, "orig-shrink", FileName))
	if err != nil || json.Unmarshal(b, &back) != nil || len(back.Candidates) != len(res.Candidates) ||
		!slices.Equal(back.Original, res.Original) || back.Original[3] != "token" {
		t.Errorf("shrink.json: %v\n%s", err, b)
	}
}

// TestShrinkRefuses: a folder that is no run, has no replay command, or
// has no anomaly to keep is an error naming it; a run that no longer shows
// its anomaly is reported, not shrunk.
func TestShrinkRefuses(t *testing.T) {
	dir := t.TempDir()
	noHeader := writeRun(t, filepath.Join(dir, "noheader"), nil, within)
	valid := writeRun(t, filepath.Join(dir, "valid"), header())
	liveness := writeRun(t, filepath.Join(dir, "liveness"), header(), stuck)
	odd := header()
	odd.Params["teleport"] = "yes"
	unknown := writeRun(t, filepath.Join(dir, "unknown"), odd, within)
	m := &lockModel{calls: map[string]int{}}
	other := Target{Kind: checker.KindForeignRelease}
	for _, tc := range []struct {
		dir    string
		target *Target
		want   string
	}{
		{filepath.Join(dir, "absent"), nil, "is not a run folder"},
		{dir, nil, "has no summary.json"},
		{noHeader, nil, "has no replay command"},
		{valid, nil, "has no safety anomaly to shrink (verdict valid, anomalies: none)"},
		{liveness, nil, "has no safety anomaly to shrink (verdict invalid, anomalies: stuck-lock 1)"},
		{liveness, &other, "has no foreign-release anomaly to shrink (it has: stuck-lock 1)"},
		{unknown, nil, "teleport"},
	} {
		_, err := Shrink(context.Background(), tc.dir, Options{Run: m.run, Target: tc.target})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.dir, err, tc.want)
		}
	}
	if len(m.runs) != 0 {
		t.Errorf("%d runs for folders that cannot be shrunk", len(m.runs))
	}
	// Named, a liveness anomaly is kept; this model never shows it again.
	k := Target{Kind: checker.KindStuckLock}
	res, err := Shrink(context.Background(), liveness, Options{Run: m.run, Target: &k})
	if err != nil || res.Reproduced || len(res.Candidates) != 1 {
		t.Errorf("stuck-lock: %v %+v", err, res)
	}
	if _, err := Shrink(context.Background(), liveness, Options{Run: m.run, Target: &k, Budget: time.Second}); err == nil ||
		!strings.Contains(err.Error(), "leaves no room") {
		t.Errorf("a budget shorter than one run: %v", err)
	}
}

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]Target{
		"double-holder":              {checker.KindDoubleHolder, ""},
		"double-holder/within-lease": {checker.KindDoubleHolder, checker.ClassWithinLease},
	} {
		if got, err := ParseTarget(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	if _, err := ParseTarget("/x"); err == nil {
		t.Error("no kind: no error")
	}
}

// TestShrinkRealRun shrinks a real run of set-px with overruns at 6
// clients: it ends at 2 clients, no more keys, seconds or faults than it
// began with, and its smallest run, kept on disk with its report, shows the
// same kind and class. It needs redis-server.
func TestShrinkRealRun(t *testing.T) {
	clustertest.Need(t)
	dir := t.TempDir()
	o := locktorture.DefaultOptions()
	o.Lock, o.Clients, o.Keys, o.Overrun, o.Seed = "set-px", 6, 1, 0.3, 11
	o.TTL, o.HoldMin, o.HoldMax, o.Duration, o.OutDir, o.RunID = 200*time.Millisecond, 5*time.Millisecond, 20*time.Millisecond, 2*time.Second, dir, "orig"
	r, err := locktorture.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != checker.Invalid {
		t.Fatalf("the original run held: %v", r.Report.Count)
	}
	res, err := Shrink(context.Background(), r.Dir, Options{Budget: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Reproduced || res.Target.Kind == "" {
		t.Fatalf("not reproduced: %+v", res)
	}
	from, to := res.From, res.To
	if to.Clients > 2 || to.Keys > from.Keys || len(to.Faults) > len(from.Faults) || to.Overrun > from.Overrun {
		t.Errorf("from %v to %v", from, to)
	}
	if d0, _ := time.ParseDuration(from.Duration); mustDur(t, to.Duration) > d0 {
		t.Errorf("longer: from %v to %v", from, to)
	}
	sum, err := readRun(res.SmallestDir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(sum.Anomalies, res.Target.Matches) || sum.Run.Clients != to.Clients || sum.Run.Seed != 11 {
		t.Errorf("the smallest run (%d clients, seed %d) does not show %v: %v", sum.Run.Clients, sum.Run.Seed, res.Target, sum.Counts)
	}
	if _, err := os.Stat(filepath.Join(res.SmallestDir, "report.html")); err != nil {
		t.Errorf("the smallest run has no report: %v", err)
	}
	runs, _ := os.ReadDir(filepath.Join(dir, "orig-shrink", "runs"))
	if len(runs) != 1 || filepath.Join(dir, "orig-shrink", "runs", runs[0].Name()) != res.SmallestDir {
		t.Errorf("run folders kept: %v, smallest %s", runs, res.SmallestDir)
	}
	t.Logf("from %v\nto %v\n%s", from, to, res.Command())
}

func mustDur(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
