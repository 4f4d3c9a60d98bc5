package libs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/locks/libs"
)

// expect is what one run must show: a verdict, anomaly kinds present and
// absent, and (when set) a double-holder of a class.
type expect struct {
	verdict checker.Verdict
	want    []checker.Kind
	absent  []checker.Kind
	class   checker.Class
}

func short(lock string, seed int64) locktorture.Options {
	return locktorture.Options{
		Lock: lock, Clients: 4, Keys: 1, Duration: 4 * time.Second, TTL: 300 * time.Millisecond,
		HoldMin: 5 * time.Millisecond, HoldMax: 30 * time.Millisecond, Seed: seed, CheckTimeout: 30 * time.Second,
	}
}

func redlockOptions(lock string, seed int64) locktorture.Options {
	return locktorture.Options{
		Lock: lock, Topology: "redlock", Nodes: 3, Clients: 4, Keys: 1, Duration: 5 * time.Second,
		TTL: 400 * time.Millisecond, HoldMin: 5 * time.Millisecond, HoldMax: 30 * time.Millisecond, Seed: seed,
		NemesisInterval: 300 * time.Millisecond, CheckTimeout: 30 * time.Second,
	}
}

// TestThirdPartyLocks puts each library through the breaking and holding
// cases of its built-in counterpart, on real redis-server processes.
func TestThirdPartyLocks(t *testing.T) {
	clustertest.Need(t)
	overrun := func(lock string, seed int64) func() locktorture.Options {
		return func() locktorture.Options {
			o := short(lock, seed)
			o.Overrun = 0.2
			return o
		}
	}
	pause := func(lock string, seed int64) func() locktorture.Options {
		return func() locktorture.Options {
			o := short(lock, seed)
			// Two clients taking turns, so a pause catches the holder.
			o.Faults, o.NemesisInterval, o.Duration = []string{"pause-client"}, time.Second, 8*time.Second
			o.Clients, o.HoldMin, o.HoldMax, o.Think = 2, 50*time.Millisecond, 150*time.Millisecond, 30*time.Millisecond
			return o
		}
	}
	plain := func(o locktorture.Options) func() locktorture.Options {
		return func() locktorture.Options { return o }
	}
	brokenLikeToken := expect{verdict: checker.Invalid, want: []checker.Kind{checker.KindDoubleHolder},
		absent: []checker.Kind{checker.KindForeignRelease}, class: checker.ClassLeaseOutlived}
	valid := expect{verdict: checker.Valid}
	cases := []struct {
		name string
		opts func() locktorture.Options
		expect
	}{
		{"redsync overrun: two holders, no foreign release", overrun("redsync", 2), brokenLikeToken},
		{"redsync without overrun holds", plain(short("redsync", 4)), valid},
		{"redislock overrun: two holders, no foreign release", overrun("redislock", 2), brokenLikeToken},
		{"redislock without overrun holds", plain(short("redislock", 4)), valid},
		{"rueidislock overrun: its renewal covers long work", overrun("rueidislock", 3), valid},
		{"rueidislock without overrun holds", plain(short("rueidislock", 4)), valid},
		{"rueidislock renews unseen through long work: the key stays held", func() locktorture.Options {
			o := short("rueidislock", 1)
			o.Clients, o.HoldMin, o.HoldMax = 3, 600*time.Millisecond, 600*time.Millisecond
			return o
		}, valid},
		{"rueidislock client paused: its renewal stops with it", pause("rueidislock", 1),
			expect{verdict: checker.Invalid, want: []checker.Kind{checker.KindDoubleHolder}, class: checker.ClassLeaseOutlived}},
		{"redsync-redlock on three masters holds", plain(redlockOptions("redsync-redlock", 1)), valid},
		{"redsync-redlock master restarting empty: two holders within the lease", func() locktorture.Options {
			// As the built-in redlock's restart test: holds long enough for
			// two restarts to land inside one, restarts back to back.
			o := redlockOptions("redsync-redlock", 1)
			o.TTL, o.HoldMin, o.HoldMax = 500*time.Millisecond, 150*time.Millisecond, 350*time.Millisecond
			o.Faults, o.NemesisInterval, o.NemesisDuration = []string{"restart-empty"}, 50*time.Millisecond, time.Millisecond
			return o
		}, expect{verdict: checker.Invalid, want: []checker.Kind{checker.KindDoubleHolder}, class: checker.ClassWithinLease}},
		{"redsync-redlock minority partitioned holds", func() locktorture.Options {
			o := redlockOptions("redsync-redlock", 2)
			o.Faults = []string{"partition-minority"}
			return o
		}, valid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts()
			o.OutDir, o.Registries = t.TempDir(), withLibs(t)
			res, err := locktorture.Run(context.Background(), o)
			if err != nil {
				t.Fatalf("run %s: %v", o.Lock, err)
			}
			t.Logf("%s: %d ops, %d acquired, %d unknown, verdict %s, counts %v", o.Lock, res.Stats.Ops,
				res.Stats.Acquired, res.Stats.Unknown, res.Verdict, res.Report.Count)
			if res.Stats.Acquired == 0 {
				t.Fatalf("%s: no acquire succeeded; the run shows nothing", o.Lock)
			}
			tc.check(t, res)
		})
	}
}

func (e expect) check(t *testing.T, res *locktorture.Result) {
	t.Helper()
	var b strings.Builder
	for i, a := range res.Report.Anomalies {
		if i < 5 {
			b.WriteString("\n  " + string(a.Kind) + " (" + string(a.Class) + "): " + a.Detail)
		}
	}
	if res.Verdict != e.verdict {
		t.Errorf("verdict %s, want %s:%s", res.Verdict, e.verdict, b.String())
	}
	for _, k := range e.want {
		if res.Report.Count[k] == 0 {
			t.Errorf("no %s anomaly; counts %v", k, res.Report.Count)
		}
	}
	for _, k := range e.absent {
		if n := res.Report.Count[k]; n > 0 {
			t.Errorf("%d %s anomalies, want none:%s", n, k, b.String())
		}
	}
	if e.class == "" {
		return
	}
	for _, a := range res.Report.Anomalies {
		if a.Kind == checker.KindDoubleHolder && a.Class == e.class {
			return
		}
	}
	t.Errorf("no double-holder classed %s:%s", e.class, b.String())
}

// withLibs is the built-in registries with the adapters, as the torture
// command has them.
func withLibs(t *testing.T) locktorture.Registries {
	t.Helper()
	regs := locktorture.Builtin()
	if err := libs.Register(regs.Locks); err != nil {
		t.Fatal(err)
	}
	return regs
}

// TestRegistry: every adapter is registered once beside the built-ins, and
// a config it cannot work with is refused with an error, not a panic.
func TestRegistry(t *testing.T) {
	reg := withLibs(t).Locks
	for _, tc := range []struct {
		name  string
		nodes int
	}{{"redsync", 1}, {"redsync-redlock", locks.RedlockNodes}, {"redislock", 1}, {"rueidislock", 1}, {"token", 1}} {
		e, err := reg.Get(tc.name)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if max(e.Nodes, 1) != tc.nodes { // 0 means one node
			t.Errorf("%s: Nodes %d, want %d", tc.name, e.Nodes, tc.nodes)
		}
		if _, err := e.New(locks.Config{TTL: time.Second}); err == nil {
			t.Errorf("%s: built without nodes, tokens or addresses", tc.name)
		}
	}
	if err := libs.Register(reg); err == nil {
		t.Error("registering the adapters twice succeeded")
	}
}
