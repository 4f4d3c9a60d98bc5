package locktorture_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/history"
	"github.com/redis/go-redis/v9"
)

// TestMain quiets go-redis, which logs every Sentinel master change of
// every client; the history records the switches.
func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	os.Exit(m.Run())
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// needRedis skips when redis-server is missing; .ci/run installs it, so in
// CI every integration test runs.
func needRedis(t testing.TB) {
	t.Helper()
	clustertest.Need(t)
}

// short returns options for a run of a few seconds with a short TTL, so a
// lock that breaks shows it quickly.
func short(lock string, seed int64) locktorture.Options {
	return locktorture.Options{
		Lock: lock, Clients: 4, Keys: 1, Duration: 4 * time.Second, TTL: 300 * time.Millisecond,
		HoldMin: 5 * time.Millisecond, HoldMax: 30 * time.Millisecond, Seed: seed,
		CheckTimeout: 30 * time.Second,
	}
}

func run(t *testing.T, opts locktorture.Options) *locktorture.Result {
	t.Helper()
	res := runLogged(t, opts)
	if res.Stats.Acquired == 0 {
		t.Fatalf("%s: no acquire succeeded; the run shows nothing", opts.Lock)
	}
	return res
}

// runLogged runs opts in a folder of the test's own (or under
// LOCKTORTURE_TEST_OUT, to keep the run folders to read), fails the test on
// a harness error and logs what the run did, for the helpers that go on to
// check what their runs must show.
func runLogged(t *testing.T, opts locktorture.Options) *locktorture.Result {
	t.Helper()
	opts.OutDir = t.TempDir()
	if d := os.Getenv("LOCKTORTURE_TEST_OUT"); d != "" {
		opts.OutDir = d
	}
	res, err := locktorture.Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("run %s/%s under %q: %v", opts.Lock, opts.Workload, opts.Faults, err)
	}
	t.Logf("%s/%s under %q: %d ops, %d acquired, %d failed, %d unknown; verdict %s, counts %v", opts.Lock, opts.Workload,
		opts.Faults, res.Stats.Ops, res.Stats.Acquired, res.Stats.AcquireFailed, res.Stats.Unknown, res.Verdict, res.Report.Count)
	return res
}

func count(res *locktorture.Result, kind checker.Kind) int { return res.Report.Count[kind] }

func classes(res *locktorture.Result, kind checker.Kind) map[checker.Class]int {
	out := map[checker.Class]int{}
	for _, a := range res.Report.Anomalies {
		if a.Kind == kind {
			out[a.Class]++
		}
	}
	return out
}

// expect is what a run must show: its verdict (empty: any), the anomaly
// kinds present and absent, some double-holder of a class, and at least one
// of several kinds.
type expect struct {
	verdict checker.Verdict
	want    []checker.Kind
	absent  []checker.Kind
	class   checker.Class
	anyOf   []checker.Kind
}

func (e expect) check(t *testing.T, res *locktorture.Result) {
	t.Helper()
	if e.verdict != "" && res.Verdict != e.verdict {
		t.Errorf("verdict %s, want %s; anomalies: %v", res.Verdict, e.verdict, describe(res))
	}
	for _, k := range e.want {
		if count(res, k) == 0 {
			t.Errorf("no %s anomaly; counts %v", k, res.Report.Count)
		}
	}
	for _, k := range e.absent {
		if n := count(res, k); n > 0 {
			t.Errorf("%d %s anomalies, want none: %v", n, k, describe(res))
		}
	}
	if len(e.anyOf) > 0 {
		n := 0
		for _, k := range e.anyOf {
			n += count(res, k)
		}
		if n == 0 {
			t.Errorf("none of %v; counts %v", e.anyOf, res.Report.Count)
		}
	}
	if e.class != "" && classes(res, checker.KindDoubleHolder)[e.class] == 0 {
		t.Errorf("no double-holder classed %s: %v", e.class, classes(res, checker.KindDoubleHolder))
	}
}

// loadHistory reads and validates a run's history.jsonl, as torture check does.
func loadHistory(t *testing.T, dir string) *history.History {
	t.Helper()
	h, err := history.Load(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func describe(res *locktorture.Result) string {
	var b strings.Builder
	for i, a := range res.Report.Anomalies {
		if i == 5 {
			break
		}
		b.WriteString("\n  " + string(a.Kind) + ": " + a.Detail)
	}
	return b.String()
}
