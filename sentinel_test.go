package locktorture_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/settings"
)

// lossyRun is the failover-lossy scenario at test size. Failovers take a few
// seconds (down-after 1 s), so the leases and holds are longer than in the
// other tests: a lock taken while replication is cut must still be held, and
// its lease still run, when the promoted replica hands the key to someone
// else. Wait is short so that each acquire's invocation is close to the SET
// that took the key (the checker dates a lease from the invocation).
func lossyRun(lock string, seed int64) locktorture.Options {
	return locktorture.Options{
		Lock: lock, Topology: "sentinel", Faults: []string{"failover-lossy"}, NemesisInterval: 6 * time.Second,
		Clients: 10, Keys: 4, Duration: 30 * time.Second, TTL: 12 * time.Second,
		HoldMin: 7 * time.Second, HoldMax: 10 * time.Second, Wait: time.Second, Seed: seed,
		CheckTimeout: 30 * time.Second,
	}
}

func runSentinel(t *testing.T, opts locktorture.Options) *locktorture.Result {
	t.Helper()
	opts.OutDir = t.TempDir()
	res, err := locktorture.Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("run %s on sentinel: %v", opts.Lock, err)
	}
	logRun(t, opts, res)
	return res
}

func logRun(t *testing.T, opts locktorture.Options, res *locktorture.Result) {
	t.Helper()
	t.Logf("%s/%s seed %d: %d acquired, %d failed, %d unknown, %d master switches, verdict %s, counts %v",
		opts.Lock, opts.Faults, opts.Seed, res.Stats.Acquired, res.Stats.AcquireFailed, res.Stats.Unknown,
		res.Stats.MasterSwitches, res.Verdict, res.Report.Count)
	if res.Stats.Acquired == 0 {
		t.Fatalf("%s: no acquire succeeded; the run shows nothing", opts.Lock)
	}
}

// switchDoubleHolders counts the double holders of a class ("" for all) and how
// many of those followed a master switch.
func switchDoubleHolders(res *locktorture.Result, class checker.Class) (n, afterSwitch int) {
	for _, a := range res.Report.Anomalies {
		if a.Kind == checker.KindDoubleHolder && (class == "" || a.Class == class) {
			n++
			if a.AfterSwitch {
				afterSwitch++
			}
		}
	}
	return n, afterSwitch
}

// redisChildren lists the redis-server and Sentinel processes this test
// binary still has as children.
func redisChildren(t *testing.T) []string {
	t.Helper()
	out, _ := exec.Command("pgrep", "-a", "-P", strconv.Itoa(os.Getpid())).Output()
	var left []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(l, "redis") {
			left = append(left, l)
		}
	}
	return left
}

func needSentinelBinaries(t *testing.T) {
	t.Helper()
	clustertest.Need(t, "redis-server", "pgrep")
}

// TestSentinel puts single-instance locks on a master with two replicas
// under three Sentinels. Latency alone breaks nothing; a failover to a
// replica that never got the lock key hands it to a second client within
// the first one's lease, for the token lock and the watchdog alike; WAIT 1
// (token-wait) refuses those locks instead, at the price of failed acquires.
// Every process the runs started is gone when each ends.
func TestSentinel(t *testing.T) {
	needSentinelBinaries(t)

	t.Run("token with latency only holds", testSentinelLatency)

	// The three runs go at once (they mostly wait on Sentinel's timers),
	// whatever -parallel allows.
	locks := []string{"token", "watchdog", "token-wait"}
	runs := map[string]locktorture.Options{}
	for _, lock := range locks {
		runs[lock] = lossyRun(lock, 1)
	}
	behind := behindRun()
	runs["behind"] = behind
	results, errs := runAtOnce(t, runs)
	if left := redisChildren(t); len(left) > 0 {
		t.Errorf("processes left after the runs: %v", left)
	}
	for _, lock := range locks {
		t.Run("failover-lossy/"+lock, func(t *testing.T) {
			res, err := results[lock], errs[lock]
			if err != nil {
				t.Fatalf("run %s: %v", lock, err)
			}
			checkLossy(t, lock, res)
		})
	}

	t.Run("failover-behind/token-wait", func(t *testing.T) {
		res, err := results["behind"], errs["behind"]
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		logRun(t, behind, res)
		if res.Stats.MasterSwitches == 0 {
			t.Fatal("no master switch: the fault never ran")
		}
		if within, _ := switchDoubleHolders(res, checker.ClassWithinLease); within == 0 {
			t.Errorf("no double-holder classed within-lease; counts %v", res.Report.Count)
		}
	})

	// The window WAIT narrows, per failover, over the same seed.
	tok, tw := results["token"], results["token-wait"]
	if tok == nil || tw == nil {
		return
	}
	rate := func(r *locktorture.Result) float64 {
		n, _ := switchDoubleHolders(r, "")
		return float64(n) / float64(max(r.Stats.MasterSwitches, 1))
	}
	t.Logf("double holders per failover: token %.2f, token-wait %.2f; failed acquires: token %d, token-wait %d",
		rate(tok), rate(tw), tok.Stats.AcquireFailed, tw.Stats.AcquireFailed)
	if rate(tw) >= rate(tok) {
		t.Errorf("token-wait (%.2f double holders per failover) does not narrow token's window (%.2f)", rate(tw), rate(tok))
	}
}

// testSentinelLatency runs the token lock under latency alone, well under
// the TTL, which must break nothing and switch no master.
func testSentinelLatency(t *testing.T) {
	o := locktorture.Options{
		Lock: "token", Topology: "sentinel", Faults: []string{"latency"}, NemesisInterval: time.Second,
		Clients: 4, Keys: 1, Duration: 5 * time.Second, TTL: 500 * time.Millisecond,
		HoldMin: 5 * time.Millisecond, HoldMax: 30 * time.Millisecond, Seed: 7, CheckTimeout: 30 * time.Second,
	}
	// Well under the TTL: latency above it breaks the token lock on
	// any topology (an acquire that returns after its lease expired).
	o.Settings = settings.Values{"latency": 50 * time.Millisecond}
	res := runSentinel(t, o)
	if res.Verdict != checker.Valid {
		t.Errorf("verdict %s, want valid: %v", res.Verdict, res.Report.Count)
	}
	if res.Stats.MasterSwitches != 0 {
		t.Errorf("%d master switches under latency alone", res.Stats.MasterSwitches)
	}
	if left := redisChildren(t); len(left) > 0 {
		t.Errorf("processes left after the run: %v", left)
	}
}

// behindRun is the failover WAIT does not survive: to the replica the lock
// did not reach, the one that acknowledged it unpromotable. The holds
// outlast a failover (a second or two), so the holder of the lock the
// failover lost still holds when a waiter takes the key from the new
// master.
func behindRun() locktorture.Options {
	return locktorture.Options{
		Lock: "token-wait", Topology: "sentinel", Faults: []string{"failover-behind"}, NemesisInterval: 6 * time.Second,
		Clients: 6, Keys: 1, Duration: 15 * time.Second, TTL: 6 * time.Second, Wait: time.Second,
		HoldMin: 3 * time.Second, HoldMax: 5 * time.Second, Seed: 1, CheckTimeout: 30 * time.Second,
	}
}

// checkLossy holds lock's failover-lossy run to what the lock promises:
// token-wait refuses the locks no replica has, the others hand the key to
// a second client within the lease, after the switch.
func checkLossy(t *testing.T, lock string, res *locktorture.Result) {
	t.Helper()
	logRun(t, lossyRun(lock, 1), res)
	if res.Stats.MasterSwitches == 0 {
		t.Fatal("no master switch: the fault never ran")
	}
	within, after := switchDoubleHolders(res, checker.ClassWithinLease)
	all, _ := switchDoubleHolders(res, "")
	switch lock {
	case "token-wait":
		if all > 0 {
			t.Errorf("%d double holders, want none: WAIT 1 should refuse a lock no replica has", all)
		}
		if res.Stats.AcquireFailed == 0 {
			t.Error("no failed acquire: with replication cut, WAIT 1 must refuse locks")
		}
	default:
		if within == 0 {
			t.Errorf("no double-holder classed within-lease; counts %v", res.Report.Count)
		}
		if after == 0 && within > 0 {
			t.Error("no within-lease double holder is marked after_switch")
		}
	}
}

// runAtOnce runs every named run at the same time (runs that mostly wait on
// Sentinel's or the cluster's timers), each into a folder of the test's.
func runAtOnce(t *testing.T, runs map[string]locktorture.Options) (map[string]*locktorture.Result, map[string]error) {
	t.Helper()
	results := map[string]*locktorture.Result{}
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, o := range runs {
		o.OutDir = t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := locktorture.Run(context.Background(), o)
			mu.Lock()
			results[name], errs[name] = res, err
			mu.Unlock()
		}()
	}
	wg.Wait()
	return results, errs
}
