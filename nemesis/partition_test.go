package nemesis_test

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/nemesis"
)

// clientCount is a run's clients as the faults see them: a number.
type clientCount int

func (c clientCount) Count() int          { return int(c) }
func (clientCount) Gate(int) nemesis.Gate { return nil }

// TestPartitionCutsTheNextHolder: aimed, partition cuts off the client of
// the very next acquire, whoever it is, whatever the seed: waiting for a
// seeded client's own numbered acquire, it came a hold or two later.
func TestPartitionCutsTheNextHolder(t *testing.T) {
	topo, netw := clustertest.Topology(t, "single", cluster.TopologyOptions{})
	node := topo.Nodes()[0]
	const clients = 4
	for c := 0; c < clients; c++ {
		if _, err := netw.Route(nemesis.ClientName(c), node.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for seed := int64(1); seed <= clients; seed++ {
		f := fault(t, "partition")
		p := newWaits()
		// A fault aimed at a seeded client would wait a minute for it
		// before it took another's acquire.
		target := &nemesis.Target{Topology: topo, Network: netw, Clients: clientCount(clients), TTL: time.Second,
			Protocol: p, ClientPatience: time.Minute}
		m := &marks{}
		done := make(chan error, 1)
		go func() { done <- f.Start(ctx, target, rand.New(rand.NewSource(seed)), m) }()
		holder := int(seed) % clients
		p.await(t, nemesis.Acquired)
		p.emit(t, nemesis.ProtocolEvent{Kind: nemesis.Acquired, Client: holder, Key: "lock:0", Lease: "L",
			Expires: time.Now().Add(time.Second)})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !cut(t, netw.Paths(nemesis.ClientName(holder), node.Addr())) {
			t.Errorf("seed %d: %s, the client that just acquired, is not cut off (%s)", seed, nemesis.ClientName(holder), m)
		}
		if err := f.Heal(ctx, target); err != nil {
			t.Fatal(err)
		}
	}
}
