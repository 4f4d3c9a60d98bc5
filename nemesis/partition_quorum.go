// The Redlock partitions, partition-minority and partition-majority: one
// type that cuts clients off from part of the masters, the cut a Redlock
// client must survive (a minority) or cannot acquire through (a majority),
// with their entries and their partition-clients setting.

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/settings"
)

// quorumPartition cuts clients off from a minority or a majority of the
// masters (the nodes are a seeded choice). Cut from a minority, a Redlock
// client still wins a majority, only later and less often, and nobody else
// can win one at the same time: it must stay valid. Cut from a majority, the
// client cannot acquire at all. PartitionClients says whether one client or
// all of them are cut; by default the seeded rng chooses at each start.
type quorumPartition struct {
	*toxicFault
	scope string
	// choose picks the nodes and clients to cut; aimClient is the client
	// the cut waits for (the one cut, or one of them).
	choose    func(t *Target, rng *rand.Rand) ([]*cluster.Path, string)
	aimClient int
}

// The names of the two variants, each written once: their entries', and
// the name each fault is built with.
const (
	namePartitionMinority = "partition-minority"
	namePartitionMajority = "partition-majority"
)

// partitionMinorityEntry is the registry entry of partition-minority, with the settings it reads.
func partitionMinorityEntry() Entry {
	return Entry{Name: namePartitionMinority,
		Summary:    "redlock: cut one client (or all) from a minority of the masters",
		New:        newPartitionMinority,
		Topologies: []string{"redlock"},
		Settings:   []settings.Setting{setDirection(), setPartitionClients()}}
}

// partitionMajorityEntry is the registry entry of partition-majority, with the settings it reads.
func partitionMajorityEntry() Entry {
	return Entry{Name: namePartitionMajority,
		Summary:    "redlock: cut one client (or all) from a majority of the masters",
		New:        newPartitionMajority,
		Topologies: []string{"redlock"},
		Settings:   []settings.Setting{setDirection(), setPartitionClients()}}
}

// setPartitionClients says whether the Redlock partitions cut one client
// or all of them.
func setPartitionClients() settings.Setting {
	return settings.Setting{Name: "partition-clients", Kind: settings.String, Choices: []string{"one", "all"}, Default: "seeded choice",
		Help: "partition-minority/-majority cut one or all clients"}
}

func newPartitionMinority(o Options) Fault {
	return newQuorumPartition(namePartitionMinority, false, o)
}
func newPartitionMajority(o Options) Fault { return newQuorumPartition(namePartitionMajority, true, o) }

func newQuorumPartition(name string, majority bool, o Options) Fault {
	f := &quorumPartition{scope: o.String("partition-clients")}
	f.toxicFault = &toxicFault{name: name, toxic: "timeout", direction: orDefault(o.String("direction"), "both"), toxicity: 1,
		attrs: dropAll,
	}
	f.choose = func(t *Target, rng *rand.Rand) ([]*cluster.Path, string) {
		nodes, err := needMasters(t)
		if err != nil || t.Clients == nil || t.Clients.Count() == 0 {
			return nil, ""
		}
		size := len(nodes) - (len(nodes)/2 + 1) // the most a majority can lose
		if majority {
			size = len(nodes)/2 + 1
		}
		cut := pickNodes(nodes, size, rng)
		clients, who := pickClients(t, f.scope, rng)
		f.aimClient = clients[rng.Intn(len(clients))]
		return cutPaths(t, clients, cut), who + " <-> " + nodeNames(cut)
	}
	f.pick = f.choose
	return f
}

// Aims implements Aiming.
func (f *quorumPartition) Aims() bool { return true }

// Start cuts, aimed (the default), as a client (seeded) is about to send an
// acquire: the cut is in place before its commands go out. Blind, at once.
func (f *quorumPartition) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	if !t.aimsAtClients() {
		return f.toxicFault.Start(ctx, t, rng, mark)
	}
	paths, what := f.choose(t, rng)
	if len(paths) == 0 {
		return errors.New("no path to act on")
	}
	fl := Filter{Kind: Acquiring, Client: f.aimClient, Skip: aimSkip(rng)}
	return f.aimToxic(ctx, t, fl, mark, func(ProtocolEvent) ([]*cluster.Path, string) { return paths, what })
}

func (f *quorumPartition) Available(t *Target) error {
	if err := f.toxicFault.Available(t); err != nil {
		return err
	}
	if _, err := needMasters(t); err != nil {
		return err
	}
	switch f.scope {
	case "", "one", "all":
	default:
		return fmt.Errorf("partition clients %q: want one or all", f.scope)
	}
	return needClients(t)
}

// pickClients returns the clients a partition cuts: one, all, or (scope "")
// either, as rng says.
func pickClients(t *Target, scope string, rng *rand.Rand) ([]int, string) {
	one := rng.Intn(2) == 0
	c := rng.Intn(t.Clients.Count())
	switch scope {
	case "one":
		one = true
	case "all":
		one = false
	}
	if one {
		return []int{c}, ClientName(c)
	}
	all := make([]int, t.Clients.Count())
	for i := range all {
		all[i] = i
	}
	return all, "all clients"
}
