// The partition fault: one client cut off from one node, the holder whose
// watchdog cannot renew while its work goes on, with its entry.

package nemesis

import (
	"context"
	"math/rand"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/settings"
)

// partition cuts one client off from one node: its bytes are dropped (the
// connection stays open, as in a real partition, so the client waits for its
// timeout). A watchdog cut off this way cannot renew while its work goes on.
//
// Aimed (the default), a client is cut right after an acquire, before its
// work begins: the holder is the one cut off, not a client that happened to
// be waiting. It is the next acquire of any client: waiting for a seeded
// client's own, with holds of a second or two and few clients, the fault
// came a hold or two later. The node is seeded as when blind.
type partition struct{ *toxicFault }

// namePartition is the fault's one name: its entry's, its toxics', its own.
const namePartition = "partition"

// partitionEntry is the registry entry of partition, with the settings it reads.
func partitionEntry() Entry {
	return Entry{Name: namePartition,
		Summary:  "cut one client from one node: its packets are dropped, one way or both",
		New:      newPartition,
		Settings: []settings.Setting{setDirection()}}
}

func newPartition(o Options) Fault {
	return partition{&toxicFault{name: namePartition, toxic: "timeout", direction: orDefault(o.String("direction"), "both"), toxicity: 1,
		attrs: dropAll, pick: oneClientToOneNode}}
}

// Aims implements Aiming.
func (partition) Aims() bool { return true }

func (f partition) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	nodes := clientNodes(t)
	if !t.aimsAtClients() || len(nodes) == 0 {
		return f.toxicFault.Start(ctx, t, rng, mark)
	}
	to := nodes[rng.Intn(len(nodes))]
	fl := Filter{Kind: Acquired, Client: -1}
	return f.aimToxic(ctx, t, fl, mark, func(e ProtocolEvent) ([]*cluster.Path, string) {
		c := ClientName(e.Client)
		return t.Network.Paths(c, to), c + " <-> " + nodeName(t, to)
	})
}
