// A test of the aimed lossy failover's last step: the old master made a
// replica right after it grants a lock, on a real Sentinel topology.

package nemesis_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/nemesis"
)

// TestFailoverLossyDemotesAtGrant: once every Sentinel names the new
// master, the aimed lossy failover makes the old master a replica right
// after the old master grants a lock that the new master lacks to a holder
// that means to hold it a while: the moment a client that learns of a
// switch only from a refused write finds the key free on the new master
// while that lock's holder still holds. A grant whose holder lets go at
// once is passed over. The Sentinels are paused meanwhile, so only the
// fault can have made it a replica.
func TestFailoverLossyDemotesAtGrant(t *testing.T) {
	topo, netw := clustertest.Topology(t, "sentinel", cluster.TopologyOptions{})
	s := topo.(*cluster.SentinelTopology)
	ctx := context.Background()
	f := fault(t, "failover-lossy")
	old := healthy(t, s, netw)
	c := client(t, old)
	p := newWaits()
	aimed := &nemesis.Target{Topology: s, Network: netw, TTL: 4 * time.Second, Protocol: p}
	m := &marks{}
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx, aimed, rand.New(rand.NewSource(1)), m) }()

	// The cut at an attempt, and that attempt's lock granted on the master
	// only: the failover goes ahead.
	p.await(t, nemesis.Point)
	p.emit(t, nemesis.ProtocolEvent{Kind: nemesis.Point, Point: "attempt", Key: "lock:b"})
	p.await(t, nemesis.Acquired)
	grant(t, p, c, "lock:b", "L1", 0)
	// The promotion is held back for the next grant on the old master.
	p.await(t, nemesis.Acquired)
	grant(t, p, c, "lock:x", "LX", time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The failover was asked of the Sentinel that clients ask last: its
	// SENTINEL MASTERS entry names the old master until the failover ends.
	if got, want := leading(t, s), len(s.SentinelAddrs())-1; got != want {
		t.Errorf("sentinel %d leads the failover, want %d (the last)", got, want)
	}

	// The fault waits for a grant on the old master once the Sentinels
	// name another; the old master still acts as one. A holder that
	// releases within a few milliseconds is gone before a waiter moves.
	p.await(t, nemesis.Acquired)
	resume := pauseSentinels(t, s)
	grant(t, p, c, "lock:c", "L2", time.Millisecond)
	p.await(t, nemesis.Acquired)
	if r := role(t, old); r != "master" {
		t.Fatalf("%s is a %s after a grant to a holder that lets go at once", old.Name, r)
	}
	grant(t, p, c, "lock:d", "L3", time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for role(t, old) != "slave" {
		if time.Now().After(deadline) {
			t.Fatalf("%s still a master 5s after it granted a lock the new master lacks", old.Name)
		}
		time.Sleep(10 * time.Millisecond)
	}
	resume()
	if err := f.Heal(ctx, aimed); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.String(), old.Name+" made a replica of") {
		t.Errorf("marks %q, want the old master made a replica", m)
	}
	healthy(t, s, netw)
}

// grant writes key=lease on the master through c and reports it granted
// through p, whose fault waits for a grant, to a holder that means to hold
// it for hold (0: unsaid).
func grant(t *testing.T, p *waits, c *redis.Client, key, lease string, hold time.Duration) {
	t.Helper()
	if err := c.Set(context.Background(), key, lease, 4*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	p.emit(t, nemesis.ProtocolEvent{Kind: nemesis.Acquired, Key: key, Lease: lease, Hold: hold, Expires: time.Now().Add(4 * time.Second)})
}

// leading returns the number of the Sentinel whose master is flagged
// failover_in_progress: the one asked to fail over, for about a second
// after it was asked; -1 when none is.
func leading(t *testing.T, s *cluster.SentinelTopology) int {
	t.Helper()
	for i, addr := range s.SentinelAddrs() {
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
		m, err := c.Do(context.Background(), "SENTINEL", "MASTER", cluster.SentinelMaster).Slice()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j+1 < len(m); j += 2 {
			if m[j] == "flags" && strings.Contains(fmt.Sprint(m[j+1]), "failover_in_progress") {
				return i
			}
		}
	}
	return -1
}

// pauseSentinels stops every Sentinel process of s (SIGSTOP) and returns
// what continues them; they are continued when the test ends in any case.
func pauseSentinels(t *testing.T, s *cluster.SentinelTopology) (resume func()) {
	t.Helper()
	var nodes []int
	for _, n := range s.Nodes() {
		nodes = append(nodes, n.Pid())
	}
	var stopped []int
	resume = func() {
		for _, pid := range stopped {
			syscall.Kill(pid, syscall.SIGCONT)
		}
		stopped = nil
	}
	t.Cleanup(resume)
	for _, pid := range s.Pids() {
		if !slices.Contains(nodes, pid) {
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatalf("pause sentinel %d: %v", pid, err)
			}
			stopped = append(stopped, pid)
		}
	}
	return resume
}
