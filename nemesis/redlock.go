// What the Redlock faults share: Prepare, by which a fault starts the
// servers its own way, the check for N >= 3 independent masters, and the
// choice and naming of the masters a fault cuts. The faults themselves
// (restart.go, partition_quorum.go, clock_jump_partition.go) each have a
// file of their own.

package nemesis

import (
	"fmt"
	"math/rand"
	"strings"

	"github.com/locktorture/locktorture/cluster"
)

// Preparer is a fault that needs the Redis servers started its own way (under
// libfaketime, with AOF fsync always). A run calls Prepare on each chosen
// fault that implements it, before it starts the topology; a fault that
// needed it but was not prepared says so in Available.
type Preparer interface {
	Prepare(o *cluster.Options) error
}

// Prepare lets every fault of faults that is a Preparer adjust o.
func Prepare(faults []Fault, o *cluster.Options) error {
	for _, f := range faults {
		if p, ok := f.(Preparer); ok {
			if err := p.Prepare(o); err != nil {
				return fmt.Errorf("prepare nemesis %s: %w", f.Name(), err)
			}
		}
	}
	return nil
}

// redlockMasters is the fewest independent masters the Redlock faults make
// sense on: with fewer, a majority tolerates no failure.
const redlockMasters = 3

// needMasters refuses topologies that are not N >= 3 independent masters:
// a restart or a partition of "a minority" means nothing on one node or on a
// replicated group.
func needMasters(t *Target) ([]*cluster.Node, error) {
	m, ok := t.Topology.(*cluster.Redlock)
	if !ok || len(m.Nodes()) < redlockMasters {
		name := "none"
		if t.Topology != nil {
			name = t.Topology.Name()
		}
		return nil, fmt.Errorf("needs %d or more independent masters (--topology redlock), not topology %s",
			redlockMasters, name)
	}
	if err := needNodes(t); err != nil {
		return nil, err
	}
	return m.Nodes(), nil
}

// pickNodes returns size nodes chosen with rng, in the nodes' order.
func pickNodes(nodes []*cluster.Node, size int, rng *rand.Rand) []*cluster.Node {
	chosen := map[int]bool{}
	for _, i := range rng.Perm(len(nodes))[:size] {
		chosen[i] = true
	}
	var out []*cluster.Node
	for i, n := range nodes {
		if chosen[i] {
			out = append(out, n)
		}
	}
	return out
}

func cutPaths(t *Target, clients []int, nodes []*cluster.Node) []*cluster.Path {
	var out []*cluster.Path
	for _, c := range clients {
		for _, n := range nodes {
			out = append(out, t.Network.Paths(ClientName(c), n.Addr())...)
		}
	}
	return out
}

func nodeNames(nodes []*cluster.Node) string {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return strings.Join(names, ",")
}
