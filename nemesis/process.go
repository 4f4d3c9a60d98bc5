// What the process faults share: picking the redis-server a fault acts on
// (aimed at one holding a live lease, or blind) and checking that the
// harness controls the servers' processes, or hands the faults its
// clients'. The faults themselves (pause-redis, crash-redis, pause-client,
// crash-client) each have a file of their own.

package nemesis

import (
	"context"
	"errors"
	"math/rand"

	"github.com/locktorture/locktorture/cluster"
)

func pickNode(t *Target, rng *rand.Rand) (*cluster.Node, error) {
	if t.Topology == nil || len(t.Topology.Nodes()) == 0 {
		return nil, errors.New("no redis node to act on")
	}
	nodes := t.Topology.Nodes()
	return nodes[rng.Intn(len(nodes))], nil
}

// aimNode picks the node a process or clock fault acts on. Aimed (the
// default), it is a node that holds a live lease, right after the acquire
// that wrote it (the step chosen from the seed), so that what the fault does
// to the node meets a lock in force; blind, any node.
func aimNode(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) (*cluster.Node, error) {
	n, err := pickNode(t, rng)
	if err != nil || !t.aimsAtClients() {
		return n, err
	}
	e, holders, err := liveLease(ctx, t, rng, t.Topology.Nodes(), true, func(ProtocolEvent, []*cluster.Node) bool { return true })
	if err != nil {
		return nil, err
	}
	n = holders[rng.Intn(len(holders))]
	a := aimAt(e)
	a.Node = n.Name
	aimed(mark, a)
	return n, nil
}

// needNodes is the Available of a fault that acts on the redis-server
// processes: the harness must have started them and control them.
func needNodes(t *Target) error {
	if t.Topology == nil || len(t.Topology.Nodes()) == 0 {
		return errors.New("needs redis-server processes the harness started")
	}
	for _, n := range t.Topology.Nodes() {
		if err := n.Control(); err != nil {
			return err
		}
	}
	return nil
}

// needClients is the Available of a fault that acts on the clients (or on
// their paths to the nodes): the run must give it their processes.
func needClients(t *Target) error {
	if t.Clients == nil {
		return errors.New("needs clients")
	}
	return nil
}
