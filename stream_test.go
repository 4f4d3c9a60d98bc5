package locktorture_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
)

// --stop-on-anomaly ends a run at the first safety anomaly the live check
// confirms, long before its duration, and still writes the history, the
// summary and the report; the status line counts what the checkers found.
// set-px with every hold outliving its TTL breaks at the first overrun.
func TestStopOnAnomaly(t *testing.T) {
	needRedis(t)
	opts := locktorture.Options{
		Lock: "set-px", Clients: 4, Keys: 1, Duration: 2 * time.Minute, TTL: 100 * time.Millisecond,
		HoldMin: 5 * time.Millisecond, HoldMax: 10 * time.Millisecond, Overrun: 1, Seed: 1,
		StopOnAnomaly: true, OutDir: t.TempDir(),
	}
	var seen int64
	opts.Progress = func(s locktorture.Status) { seen = max(seen, s.Anomalies) }
	res, err := locktorture.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.StoppedOnAnomaly || res.Verdict != checker.Invalid || res.Report.Severity[checker.SeveritySafety] == 0 {
		t.Fatalf("stopped %v, verdict %s, counts %v", res.StoppedOnAnomaly, res.Verdict, res.Report.Count)
	}
	if res.Stats.Duration >= opts.Duration {
		t.Fatalf("ran %v of %v: the anomaly did not stop it", res.Stats.Duration, opts.Duration)
	}
	for _, f := range []string{"history.jsonl", "summary.json", "report.html"} {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	// The saved history, checked again from disk, gives the same verdict.
	chk, err := locktorture.Check(context.Background(), res.Dir, locktorture.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if chk.Report.Verdict != res.Report.Verdict {
		t.Errorf("check of the saved history: %s %v, the run said %s %v", chk.Report.Verdict, chk.Report.Count, res.Report.Verdict, res.Report.Count)
	}
	t.Logf("stopped after %v with %v; status line saw %d", res.Stats.Duration, res.Report.Count, seen)
}

// A saved history checked again from disk gives the run's counts exactly,
// kind by kind, also past the cap on the anomalies listed (50 a kind): the
// run checks in short windows, `torture check` in long ones, and a count
// must not depend on where the windows fall.
func TestCheckCountsAsTheRun(t *testing.T) {
	needRedis(t)
	opts := short("set-px", 7)
	// Short holds and many overruns: each overrun overlaps dozens of holds.
	opts.Clients, opts.Overrun, opts.OutDir = 8, 0.3, t.TempDir()
	opts.HoldMin, opts.HoldMax, opts.Duration = 0, 5*time.Millisecond, 6*time.Second
	res, err := locktorture.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Count[checker.KindDoubleHolder] <= checker.DefaultMaxAnomalies {
		t.Fatalf("the run found %v: too few double holders to pass the list's cap", res.Report.Count)
	}
	chk, err := locktorture.Check(context.Background(), res.Dir, locktorture.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(chk.Report.Count) != len(res.Report.Count) {
		t.Fatalf("check counted %v, the run %v", chk.Report.Count, res.Report.Count)
	}
	for k, n := range res.Report.Count {
		if chk.Report.Count[k] != n {
			t.Fatalf("check counted %v, the run %v", chk.Report.Count, res.Report.Count)
		}
	}
	t.Logf("run and check counted %v", res.Report.Count)
}
