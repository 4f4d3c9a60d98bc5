package locktorture_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
)

// clusterLossyRun is cluster-failover-lossy at test size. The fault
// promotes the replica as soon as a lock is written on its master only,
// with more than half its lease left. The promoted replica may still hold
// the previous holder's key (its release was not replicated either), for at
// most TTL - HoldMin = 1 s; holds of at least 3 s of a 4 s TTL make sure the
// new holder still holds, within its lease, when a waiter takes the key
// from the promoted replica. One key, so that every other client waits on
// it.
func clusterLossyRun(seed int64) locktorture.Options {
	return locktorture.Options{
		Lock: "token", Topology: "cluster", Faults: []string{"cluster-failover-lossy"}, NemesisInterval: 3 * time.Second,
		Clients: 4, Keys: 1, Duration: 14 * time.Second, TTL: 4 * time.Second,
		HoldMin: 3 * time.Second, HoldMax: 3800 * time.Millisecond, Wait: time.Second, Seed: seed,
		CheckTimeout: 30 * time.Second,
	}
}

// clusterMigrationRun is slot-migration at test size: short leases, many
// acquires and releases of each key while its slot moves, three keys on
// three masters.
func clusterMigrationRun(seed int64) locktorture.Options {
	return locktorture.Options{
		Lock: "token", Topology: "cluster", Faults: []string{"slot-migration"}, NemesisInterval: time.Second,
		Clients: 6, Keys: 3, Duration: 8 * time.Second, TTL: time.Second,
		HoldMin: 20 * time.Millisecond, HoldMax: 150 * time.Millisecond, Seed: seed, CheckTimeout: 30 * time.Second,
	}
}

// faultWindows reads the fault windows of a run's summary.json.
func faultWindows(t *testing.T, res *locktorture.Result, fault string) int {
	t.Helper()
	n := 0
	for _, w := range readSummary(t, res.Dir).Faults {
		if w.Fault == fault {
			n++
			t.Logf("%s: %s", w.Fault, w.Target)
		}
	}
	return n
}

// TestRedisCluster puts the token lock on a Redis Cluster (three masters
// with a replica each, cluster-aware clients). A forced failover to a
// replica that never got the newest lock hands it to a second client
// within the first one's lease; a slot migrating while locks live in it
// breaks nothing (each key keeps its token and TTL, ASK sends clients to
// wherever it is). The two runs go at once; every process is gone after.
func TestRedisCluster(t *testing.T) {
	needSentinelBinaries(t)
	runs := map[string]locktorture.Options{"lossy": clusterLossyRun(1), "migration": clusterMigrationRun(1)}
	results, errs := runAtOnce(t, runs)
	if left := redisChildren(t); len(left) > 0 {
		t.Errorf("processes left after the runs: %v", left)
	}

	t.Run("token breaks under cluster-failover-lossy", func(t *testing.T) {
		res, err := results["lossy"], errs["lossy"]
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		logRun(t, runs["lossy"], res)
		if faultWindows(t, res, "cluster-failover-lossy") == 0 || res.Stats.MasterSwitches == 0 {
			t.Fatal("no forced failover: the fault never ran")
		}
		within, after := switchDoubleHolders(res, checker.ClassWithinLease)
		if within == 0 {
			t.Errorf("no double-holder classed within-lease; counts %v", res.Report.Count)
		}
		if after == 0 && within > 0 {
			t.Error("no within-lease double holder is marked after_switch")
		}
		if res.Verdict != checker.Invalid {
			t.Errorf("verdict %s, want invalid", res.Verdict)
		}
	})

	t.Run("token holds under slot-migration", func(t *testing.T) {
		res, err := results["migration"], errs["migration"]
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		logRun(t, runs["migration"], res)
		if faultWindows(t, res, "slot-migration") == 0 {
			t.Fatal("no slot migrated: the fault never ran")
		}
		if res.Verdict != checker.Valid {
			t.Errorf("verdict %s, want valid: %v", res.Verdict, res.Report.Count)
		}
	})
}

// TestRedisClusterFaultOnSingle: a Redis Cluster fault on another topology
// is a usage error that names the topology it needs, before any server
// starts.
func TestRedisClusterFaultOnSingle(t *testing.T) {
	needSentinelBinaries(t)
	o := clusterMigrationRun(1)
	o.Topology = "single"
	_, err := locktorture.Run(context.Background(), o)
	if err == nil || !locktorture.IsUsage(err) || !strings.Contains(err.Error(), "topology cluster") {
		t.Fatalf("slot-migration on single: %v, want a usage error naming topology cluster", err)
	}
}
