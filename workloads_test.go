package locktorture_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// runWorkload runs opts and fails the test on a harness error. Unlike run,
// it does not insist on acquires: stock-lua takes no lock.
func runWorkload(t *testing.T, opts locktorture.Options) *locktorture.Result {
	t.Helper()
	res := runLogged(t, opts)
	if res.Stats.Ops+res.Stats.ResourceOps == 0 {
		t.Fatal("no operation ran; the run shows nothing")
	}
	return res
}

// checkerStats returns the stats of the named checker's result.
func checkerStats(res *locktorture.Result, name string) map[string]int64 {
	for _, r := range res.Report.Results {
		if r.Checker == name {
			return r.Stats
		}
	}
	return nil
}

// historyOps reads the run's history and calls fn on every completion.
func historyOps(t *testing.T, dir string, fn func(op, typ string, value *int64, fence int64)) {
	t.Helper()
	for _, e := range loadHistory(t, dir).Events {
		if e.Type != history.Invoke {
			fn(string(e.Op), string(e.Type), e.Value, e.Fence)
		}
	}
}

// resourceCase is one scenario of TestResourceWorkloads: a run, the anomaly
// kinds it must show at least so many of (0: none allowed), the class a
// double holder among them must have, and what else the run must show.
type resourceCase struct {
	name   string
	opts   locktorture.Options
	want   map[checker.Kind]int // kind -> at least this many (0: none allowed)
	class  checker.Class        // a double holder of this class must be among them
	verify func(t *testing.T, res *locktorture.Result)
}

// TestResourceWorkloads shows what the lock was protecting: for each
// workload the scenario where the resource takes damage, with the anomaly
// kind asserted, and the one where it does not.
func TestResourceWorkloads(t *testing.T) {
	needRedis(t)
	cases := slices.Concat(fencedWorkloadCases(), reentrantWorkloadCases(), batchAndStockCases())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, runWorkload(t, tc.opts))
		})
	}
}

// check holds res to the case's kinds, class and verify.
func (tc resourceCase) check(t *testing.T, res *locktorture.Result) {
	t.Helper()
	for k, n := range tc.want {
		got := count(res, k)
		if n == 0 && got > 0 {
			t.Errorf("%d %s anomalies, want none: %v", got, k, describe(res))
		}
		if n > 0 && got < n {
			t.Errorf("%d %s anomalies, want at least %d; counts %v", got, k, n, res.Report.Count)
		}
	}
	if tc.class != "" && classes(res, checker.KindDoubleHolder)[tc.class] == 0 {
		t.Errorf("no double-holder classed %s: %v", tc.class, classes(res, checker.KindDoubleHolder))
	}
	if tc.verify != nil {
		tc.verify(t, res)
	}
}

// pausedWorkload is a run where most pauses stop a holder: four clients on
// four keys hold most of the time, so most pauses (700 ms, past the 300 ms
// TTL) stop a holder, and another client takes its key and writes before it
// wakes.
func pausedWorkload(lock, workload string) locktorture.Options {
	o := short(lock, 3)
	o.Workload, o.Clients, o.Keys, o.HoldMin, o.HoldMax = workload, 4, 4, 100*time.Millisecond, 200*time.Millisecond
	o.Faults, o.NemesisInterval, o.Duration = []string{"pause-client"}, 700*time.Millisecond, 6*time.Second
	return o
}

// overrunWorkload is a run where one hold in ten outlives the TTL.
func overrunWorkload(lock, workload string) locktorture.Options {
	o := short(lock, 3)
	o.Workload, o.Clients, o.Overrun = workload, 3, 0.1
	return o
}

// fencedWorkloadCases are the fenced store, checking its tokens or not,
// under paused holders.
func fencedWorkloadCases() []resourceCase {
	return []resourceCase{
		{
			name: "fenced store refuses the paused holder's writes",
			opts: pausedWorkload("fenced", "fenced"),
			want: map[checker.Kind]int{checker.KindDoubleHolder: 1, checker.KindStaleWrite: 0, checker.KindLostUpdate: 0,
				checker.KindFenceRegression: 0},
			class: checker.ClassLeaseOutlived,
			verify: func(t *testing.T, res *locktorture.Result) {
				st := checkerStats(res, "stale-write")
				t.Logf("store: %d writes, %d rejected", st["writes"], st["rejected"])
				if st["rejected"] == 0 {
					t.Error("the store rejected no write: no paused holder came back to write")
				}
			},
		},
		{
			// The same tokens, handed to a store that ignores them: what
			// the token lock alone gives the resource.
			name: "unchecked store takes the paused holder's stale writes",
			opts: pausedWorkload("fenced", "fenced-unchecked"),
			want: map[checker.Kind]int{checker.KindDoubleHolder: 1, checker.KindStaleWrite: 1},
			verify: func(t *testing.T, res *locktorture.Result) {
				if st := checkerStats(res, "stale-write"); st["rejected"] != 0 {
					t.Errorf("an unchecked store rejected %d writes", st["rejected"])
				}
			},
		},
	}
}

// reentrantWorkloadCases are the reentrant workload nesting cleanly, and
// counting twice what go-redis replays.
func reentrantWorkloadCases() []resourceCase {
	return []resourceCase{
		{
			name: "reentrant nested to depth 3 holds",
			opts: func() locktorture.Options { o := short("reentrant", 1); o.Workload = "reentrant"; return o }(),
			want: map[checker.Kind]int{},
			verify: func(t *testing.T, res *locktorture.Result) {
				if res.Verdict != checker.Valid {
					t.Errorf("verdict %s, want valid", res.Verdict)
				}
				depth3 := 0
				historyOps(t, res.Dir, func(op, typ string, v *int64, _ int64) {
					if op == "nested-acquire" && typ == "ok" && v != nil && *v == 3 {
						depth3++
					}
				})
				if depth3 == 0 {
					t.Error("no hold nested to depth 3")
				}
			},
		},
		{
			name: "reentrant under lost replies: go-redis replays count twice",
			opts: func() locktorture.Options {
				o := short("reentrant", 3)
				o.Workload, o.Clients, o.Faults, o.NemesisInterval, o.Duration = "reentrant", 3, []string{"lost-reply"}, time.Second, 6*time.Second
				o.RedisTimeout = 100 * time.Millisecond
				return o
			}(),
			want:  map[checker.Kind]int{checker.KindReentryCount: 1},
			class: "",
			verify: func(t *testing.T, res *locktorture.Result) {
				if n := classes(res, checker.KindReentryCount)[checker.ClassDoubleCount]; n == 0 {
					t.Errorf("no reentry-count classed double-count: %v", classes(res, checker.KindReentryCount))
				}
			},
		},
	}
}

// batchAndStockCases are the batch and stock workloads with long work on
// a lock without a watchdog and one with it, and the stock sold by one
// atomic script under every single-node fault.
func batchAndStockCases() []resourceCase {
	return []resourceCase{
		{
			name: "batch on set-px with long work: tasks queued twice",
			opts: overrunWorkload("set-px", "batch"),
			want: map[checker.Kind]int{checker.KindDuplicateWork: 1},
		},
		{
			name: "batch on watchdog with the same long work: each task once",
			opts: overrunWorkload("watchdog", "batch"),
			want: map[checker.Kind]int{},
			verify: func(t *testing.T, res *locktorture.Result) {
				if res.Verdict != checker.Valid {
					t.Errorf("verdict %s, want valid", res.Verdict)
				}
				if st := checkerStats(res, "duplicate-work"); st["enqueued"] == 0 {
					t.Error("nothing enqueued")
				}
			},
		},
		{
			name: "stock on set-px with long work: oversold",
			opts: overrunWorkload("set-px", "stock"),
			want: map[checker.Kind]int{checker.KindOversell: 1},
		},
		stockLuaCase(),
	}
}

// stockLuaCase is the stock sold by one atomic script, which needs no lock,
// and which no fault of a single node breaks: the restart without
// persistence wipes the sale, which then ends early instead of selling
// twice.
func stockLuaCase() resourceCase {
	o := short("token", 9)
	o.Workload, o.Think, o.Duration = "stock-lua", time.Millisecond, 6*time.Second
	o.Faults = locktorture.ParseList("latency,partition,lost-reply,pause-redis,crash-redis,pause-client,crash-client")
	o.NemesisInterval, o.RedisTimeout = 300*time.Millisecond, 200*time.Millisecond
	// No lock steps to aim at: the faults land by the clock.
	o.Target = locktorture.TargetRandom
	return resourceCase{
		name: "stock-lua under every single-node fault",
		opts: o,
		want: map[checker.Kind]int{checker.KindOversell: 0, checker.KindDoubleBuy: 0},
		verify: func(t *testing.T, res *locktorture.Result) {
			// Seven faults in six seconds: one that never got its
			// window leaves the run untested, and says so; nothing
			// else may.
			if res.Verdict != checker.Valid && res.Verdict != checker.Untested {
				t.Errorf("verdict %s, want valid", res.Verdict)
			}
			for _, u := range res.Report.Untested {
				if !strings.HasPrefix(u, "fault ") {
					t.Errorf("untested: %s", u)
				}
			}
			if res.Stats.Faults == nil || res.Stats.Faults.Started < 3 {
				t.Errorf("faults %+v: too few landed to show anything", res.Stats.Faults)
			}
			st := checkerStats(res, "oversell")
			t.Logf("sales: %v", st)
			if st["sold"] == 0 || st["sales"] < 2 {
				t.Errorf("the run sold too little to show anything: %v", st)
			}
			assertHealed(t, res.Dir)
		},
	}
}

// TestFencedFailover puts the fenced lock on a master with two replicas
// and loses a failover's worth of INCRs: the fencing counter goes back, the
// fence-regression checker must say so whenever the history shows it, and
// the checking store, which still remembers the higher tokens, refuses the
// legitimate holder's writes instead of taking a stale one.
func TestFencedFailover(t *testing.T) {
	needSentinelBinaries(t)
	if testing.Short() {
		t.Skip("a failover takes seconds")
	}
	o := locktorture.Options{
		Lock: "fenced", Workload: "fenced", Topology: "sentinel", Faults: []string{"failover-lossy"}, NemesisInterval: 4 * time.Second,
		Clients: 4, Keys: 1, Duration: 15 * time.Second, TTL: time.Second,
		HoldMin: 20 * time.Millisecond, HoldMax: 100 * time.Millisecond, Seed: 5, CheckTimeout: 30 * time.Second,
	}
	res := runWorkload(t, o)
	if res.Stats.MasterSwitches == 0 {
		t.Fatal("no master switch: the fault never ran")
	}
	// Independently of the checker, by brute force: an ok acquire whose
	// token is no higher than one an acquire had returned before it began.
	type acq struct{ call, ret, fence int64 }
	var acqs []acq
	for _, o := range loadHistory(t, res.Dir).Operations() {
		if o.Op == history.Acquire && o.Status == history.OK && o.Fence > 0 {
			acqs = append(acqs, acq{o.Call, o.Return, o.Fence})
		}
	}
	backwards := 0
	for _, b := range acqs {
		for _, a := range acqs {
			if a.ret < b.call && a.fence >= b.fence {
				backwards++
				break
			}
		}
	}
	st := checkerStats(res, "stale-write")
	t.Logf("%d master switches; %d acquires got a token no higher than an earlier one; fence-regression %d; store rejected %d of %d writes",
		res.Stats.MasterSwitches, backwards, count(res, checker.KindFenceRegression), st["rejected"], st["writes"])
	if got := count(res, checker.KindFenceRegression); got != backwards {
		t.Errorf("fence-regression counted %d, the history has %d acquires with a token that went back", got, backwards)
	}
	if n := count(res, checker.KindStaleWrite); n > 0 {
		t.Errorf("the checking store accepted %d stale writes", n)
	}
	if left := redisChildren(t); len(left) > 0 {
		t.Errorf("processes left after the run: %v", left)
	}
}
