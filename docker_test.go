package locktorture_test

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/internal/needdocker"
	"github.com/locktorture/locktorture/settings"
)

// dockerCase is one run of TestDockerBackend and what it must show.
type dockerCase struct {
	name string
	opts locktorture.Options
	check
}

// TestDockerBackend runs single, redlock, sentinel and cluster on containers, each
// in the scenario that breaks a lock and in one it survives, and checks that
// nothing of the runs is left on the engine afterwards. The runs are sized
// for containers: a container restarts in about half a second (a process
// in milliseconds), so the Redlock leases are long enough for a node to come
// back empty within them.
func TestDockerBackend(t *testing.T) {
	needRedis(t)
	needdocker.Need(t)
	cases := dockerCases()
	results, errs := runDockerCases(t, cases)
	if left, _ := needdocker.Left(t, os.Getpid()); len(left) > 0 {
		t.Errorf("the runs left on the Docker engine: %v", left)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if errs[i] != nil {
				t.Fatalf("run: %v", errs[i])
			}
			c.verify(t, results[i])
		})
	}
}

// verify holds one run's result to what its case must show.
func (c dockerCase) verify(t *testing.T, res *locktorture.Result) {
	t.Helper()
	defer func() {
		if t.Failed() {
			logFaults(t, res)
		}
	}()
	t.Logf("%d acquired, %d failed, %d unknown, %d master switches; verdict %s, counts %v",
		res.Stats.Acquired, res.Stats.AcquireFailed, res.Stats.Unknown, res.Stats.MasterSwitches,
		res.Verdict, res.Report.Count)
	if res.Stats.Acquired == 0 {
		t.Fatal("no acquire succeeded; the run shows nothing")
	}
	if res.Stats.Acquired < int64(c.acquired) {
		t.Fatalf("%d acquires, want at least %d for the verdict to mean something", res.Stats.Acquired, c.acquired)
	}
	if c.switches && res.Stats.MasterSwitches == 0 {
		t.Fatal("no master switch: the failover never happened")
	}
	if c.migrated && faultWindows(t, res, "slot-migration") == 0 {
		t.Fatal("no slot migrated")
	}
	c.check.check(t, res)
}

// logFaults says what each fault start of a failed case did: a fault that
// came to nothing carries the reason.
func logFaults(t *testing.T, res *locktorture.Result) {
	t.Helper()
	for _, w := range readSummary(t, res.Dir).Faults {
		t.Logf("fault %s on %s, %.3fs to %.3fs %s", w.Fault, w.Target,
			time.Duration(w.Start).Seconds(), time.Duration(w.End).Seconds(), w.NoEffect)
	}
}

// runDockerCases runs every case and returns their results and errors, in
// the cases' order. Redlock bounds each node's reply by its per-node
// timeout, which a loaded machine may miss when other runs share it: the
// Redlock runs (and the clock jump, see dockerCases) go alone, first. The
// others (mostly waiting on Sentinel's timers) then go two at a time.
func runDockerCases(t *testing.T, cases []dockerCase) ([]*locktorture.Result, []error) {
	results := make([]*locktorture.Result, len(cases))
	errs := make([]error, len(cases))
	runCase := func(i int) {
		o := cases[i].opts
		o.OutDir = t.TempDir()
		o.Logf = func(format string, args ...any) { t.Logf("%s: "+format, append([]any{cases[i].name}, args...)...) }
		results[i], errs[i] = locktorture.Run(t.Context(), o)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	alone := func(o locktorture.Options) bool {
		return o.Topology == "redlock" || len(o.Faults) > 0 && o.Faults[0] == "clock-jump"
	}
	for i, c := range cases {
		if alone(c.opts) {
			runCase(i)
		}
	}
	for i, c := range cases {
		if alone(c.opts) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			runCase(i)
		}()
	}
	wg.Wait()
	return results, errs
}

// dockerSingle is a short run of lock on one containerised node.
func dockerSingle(lock string, seed int64) locktorture.Options {
	o := short(lock, seed)
	o.Backend = locktorture.BackendDocker
	return o
}

// dockerRedlock is a Redlock run on containers under fault, restarting
// nodes.
func dockerRedlock(fault string) locktorture.Options {
	o := restartOptions(fault, 3, 1)
	o.Backend = locktorture.BackendDocker
	// Restarts spaced by ~300ms leave each restarted node up and
	// empty for a while before the next kill; holds of 2-2.8s under a
	// 3s lease see several restarts; 8 clients keep someone waiting
	// to take the emptied majority (seeds 1 to 4 all broke).
	o.TTL, o.HoldMin, o.HoldMax, o.Duration = 3*time.Second, 2*time.Second, 2800*time.Millisecond, 10*time.Second
	o.NemesisInterval, o.Clients = 300*time.Millisecond, 8
	// Through docker's port publishing a reply takes longer than the
	// default per-node timeout (TTL/10, at most 50ms) on a loaded
	// machine; the user's per-command timeout binds Redlock too.
	o.RedisTimeout = 300 * time.Millisecond
	// This test is about the backend: the restarts keep the blind
	// schedule these settings were sized for (holds of seconds leave
	// too few acquires for a step-aimed fault to wait on).
	o.Target = locktorture.TargetRandom
	return o
}

// dockerCases are the runs of TestDockerBackend: for each topology the
// scenario that breaks a lock and one it survives.
func dockerCases() []dockerCase {
	// The control restarts a node with its data about once a second: back
	// to back, a node would be down most of the time and few acquires
	// would succeed to show anything.
	// Its holds are short: a control must acquire often enough for its
	// clean verdict to mean something, and it needs no hold to outlive a
	// restart.
	fsync := dockerRedlock("restart-fsync")
	fsync.NemesisInterval, fsync.HoldMin, fsync.HoldMax = time.Second, 100*time.Millisecond, 400*time.Millisecond
	latency := locktorture.Options{
		Lock: "token", Topology: "sentinel", Backend: locktorture.BackendDocker, Faults: []string{"latency"},
		NemesisInterval: time.Second, Clients: 4, Keys: 1, Duration: 5 * time.Second, TTL: 500 * time.Millisecond,
		HoldMin: 5 * time.Millisecond, HoldMax: 30 * time.Millisecond, Seed: 7, CheckTimeout: 30 * time.Second,
	}
	latency.Settings = settings.Values{"latency": 50 * time.Millisecond}
	lossy := lossyRun("token", 1)
	lossy.Backend = locktorture.BackendDocker
	overrun := dockerSingle("set-px", 1)
	overrun.Overrun = 0.2
	// The clock faults preload libfaketime, which the image carries. A
	// jump goes through the engine's API (tens of milliseconds), so the
	// holds are long enough for the jumped holder to be still at work
	// when the next client takes the expired key.
	// It runs alone, like the Redlock runs: under -race, beside two other
	// runs of containers, most of its commands timed out.
	jump := dockerSingle("token", 2)
	jump.Faults, jump.NemesisInterval, jump.TTL = []string{"clock-jump"}, time.Second, time.Second
	jump.HoldMin, jump.HoldMax, jump.RedisTimeout = 300*time.Millisecond, 600*time.Millisecond, 300*time.Millisecond
	clusterLossy, migration := clusterLossyRun(1), clusterMigrationRun(1)
	clusterLossy.Backend, migration.Backend = locktorture.BackendDocker, locktorture.BackendDocker
	return []dockerCase{
		{"single/set-px overrun: foreign release", overrun,
			check{expect: expect{verdict: checker.Invalid, want: []checker.Kind{checker.KindForeignRelease}}}},
		{"single/token holds", dockerSingle("token", 4), check{expect: expect{verdict: checker.Valid}}},
		{"single/token clock-jump: two holders within the lease", jump,
			check{expect: expect{verdict: checker.Invalid, class: checker.ClassWithinLease}}},
		{"redlock/restart-empty: two holders within the lease", dockerRedlock("restart-empty"),
			check{expect: expect{verdict: checker.Invalid, class: checker.ClassWithinLease}}},
		{"redlock/restart-fsync holds", fsync, check{expect: expect{verdict: checker.Valid}, acquired: 10}},
		{"sentinel/token latency holds", latency, check{expect: expect{verdict: checker.Valid}}},
		{"sentinel/token failover-lossy: two holders within the lease", lossy,
			check{expect: expect{verdict: checker.Invalid, class: checker.ClassWithinLease}, switches: true}},
		{"cluster/token cluster-failover-lossy: two holders within the lease", clusterLossy,
			check{expect: expect{verdict: checker.Invalid, class: checker.ClassWithinLease}, switches: true}},
		{"cluster/token slot-migration holds", migration, check{expect: expect{verdict: checker.Valid}, migrated: true}},
	}
}

// check is what one Docker run must show.
type check struct {
	expect
	switches bool // the run must have seen a failover
	migrated bool // the run must have migrated a lock's slot
	acquired int  // the fewest successful acquires that make the run evidence
}
