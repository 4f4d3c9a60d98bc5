package program_test

import (
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
)

// withinLease ends a run at its first double holder within the lease: what
// a lossy failover must show, and all a test needs to see of it.
func withinLease(a checker.Anomaly) bool {
	return a.Kind == checker.KindDoubleHolder && a.Class == checker.ClassWithinLease
}

// onTopology runs lock on topology as the matrix's failover cells do:
// sentinel with the settings of token-failover-lossy, cluster with those of
// token-cluster-failover-lossy (holds of most of a 4 s TTL on one key, so
// the holder of the lock the failover loses still holds when a waiter takes
// it). A run with a fault ends at its first double holder within the
// lease; one without lasts a few seconds.
func onTopology(lock, topology string, faults ...string) locktorture.Options {
	o := locktorture.Options{Lock: lock, Topology: topology, Faults: faults, Clients: 6, Keys: 1,
		Duration: 15 * time.Second, TTL: 2 * time.Second, HoldMin: 50 * time.Millisecond, HoldMax: 300 * time.Millisecond,
		NemesisInterval: time.Second, Seed: 1, CheckTimeout: 30 * time.Second}
	if topology == "cluster" {
		o.Clients, o.TTL, o.HoldMin, o.HoldMax, o.Wait = 4, 4*time.Second, 3*time.Second, 3800*time.Millisecond, time.Second
		o.Duration, o.NemesisInterval = 14*time.Second, 3*time.Second
	}
	if len(faults) == 0 {
		o.Duration = 3 * time.Second
		if topology == "cluster" {
			// Short holds: enough acquires in a few seconds.
			o.TTL, o.HoldMin, o.HoldMax, o.Wait = time.Second, 20*time.Millisecond, 150*time.Millisecond, 0
		}
	}
	o.StopWhen = withinLease
	return o
}

// topologyCases are the fault-free control and the lossy failover of each
// program on topology: the control holds, the failover loses a lock.
func topologyCases(topology, fault string, locks ...string) []verdictCase {
	var cases []verdictCase
	for _, lock := range locks {
		cases = append(cases,
			verdictCase{lock + "/fault-free", onTopology(lock, topology), verdict{valid: true}},
			verdictCase{lock + "/" + fault, onTopology(lock, topology, fault),
				verdict{want: checker.KindDoubleHolder, class: checker.ClassWithinLease}})
	}
	return cases
}

// TestSentinelPrograms: lock programs find the master through the
// Sentinels (redis-py's Sentinel(...).master_for, django-redis's
// SentinelClient, go-redis's failover client in the reference client), at
// this client's proxies, and a lossy failover hands a second client a lock
// the first still holds. django-redis writes ":1:lock:0", not the key it
// is asked for: the failover finds its lease by the hello's key template.
func TestSentinelPrograms(t *testing.T) {
	needPython(t)
	needDjango(t)
	runCases(t, topologyCases("sentinel", "failover-lossy", "redis-py", "django-redis", "exec-token"))
}

// TestClusterPrograms: lock programs follow a Redis Cluster's slots
// (redis-py's RedisCluster, go-redis's cluster client), every node they
// learn of dialled through the hello's map, and a forced failover to a
// replica that lacks a lock gives it out again within its lease.
func TestClusterPrograms(t *testing.T) {
	needPython(t)
	needDjango(t)
	runCases(t, topologyCases("cluster", "cluster-failover-lossy", "redis-py", "django-redis", "exec-token"))
}
