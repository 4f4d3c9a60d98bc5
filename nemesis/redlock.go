package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/sleep"
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

// restartNode kills masters with SIGKILL and starts them again on their
// ports. It exists for seed 002's restart problem (重启问题) and its two fixes:
//
//   - restart-empty: back at once with no persistence, whatever --persistence
//     says (a node without persistence, or one whose disk was lost). The
//     locks it acknowledged are gone while their leases still run, so a
//     second client can win a majority with it: Redlock's double holder
//     within the lease.
//   - restart-delayed: back empty, but only once the longest TTL has passed
//     since the kill (the seed's 延迟重启), so every lease that counted on
//     the node has expired: no double holder.
//   - restart-fsync: every master runs AOF with appendfsync always from the
//     start (Prepare forces it, over --persistence), and comes back at once
//     with every key it acknowledged: no double holder. This is the explicit
//     fsync control; crash-redis with --persistence always is the same
//     fault for any topology.
//
// Aimed (the default), each start restarts masters that hold a live lease
// (read on the nodes themselves): one a client holds, or the next right
// after its acquire. It restarts as many of them as the lease has above a
// bare majority, plus one, one after the other (each back before the next
// goes down, so never more than one is down at a time): then the lease is
// left on a minority and another client can win a majority within it,
// whether the lease was won on a bare majority (one restart) or on every
// master. The controls restart the same masters; restart-delayed takes
// them all down together and brings them back after the TTL. Blind, it
// restarts one master chosen at random.
type restartNode struct {
	name    string
	delayed bool
	fsync   bool

	prepared bool
	down     []*cluster.Node // killed and not yet restarted
	back     time.Time       // when a delayed restart may happen
}

func newRestartEmpty(Options) Fault   { return &restartNode{name: "restart-empty"} }
func newRestartDelayed(Options) Fault { return &restartNode{name: "restart-delayed", delayed: true} }
func newRestartFsync(Options) Fault   { return &restartNode{name: "restart-fsync", fsync: true} }

func (f *restartNode) Name() string { return f.name }

// Aims implements Aiming.
func (f *restartNode) Aims() bool { return true }

// Instant implements Instant: the nodes are back when Start returns.
func (f *restartNode) Instant() bool { return true }

// Prepare makes every node of restart-fsync run AOF with fsync always, so
// that what a node acknowledged is on disk before the kill.
func (f *restartNode) Prepare(o *cluster.Options) error {
	if f.fsync {
		o.Persistence = cluster.PersistAlways
		f.prepared = true
	}
	return nil
}

func (f *restartNode) Available(t *Target) error {
	if _, err := needMasters(t); err != nil {
		return err
	}
	if f.fsync && !f.prepared {
		return errors.New("the masters were not started with AOF fsync always (Prepare was not called)")
	}
	return nil
}

// downtime is how long restart-delayed keeps a node down: the TTL every key
// was written with, plus a margin for the server's own expiry granularity.
func downtime(t *Target) time.Duration { return t.TTL + t.TTL/10 + 10*time.Millisecond }

func (f *restartNode) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	nodes, err := needMasters(t)
	if err != nil {
		return err
	}
	if f.fsync {
		// Only a node that ran with AOF always all along keeps its keys.
		var synced []*cluster.Node
		for _, n := range nodes {
			if n.Persistence == cluster.PersistAlways {
				synced = append(synced, n)
			}
		}
		nodes = synced
		if len(nodes) == 0 {
			return errors.New("no master runs with AOF fsync always")
		}
	}
	victims := []*cluster.Node{nodes[rng.Intn(len(nodes))]}
	if t.aiming() {
		e, holders, err := f.lease(ctx, t, rng, nodes)
		if err != nil {
			return err
		}
		quorum := len(t.Topology.Nodes())/2 + 1
		need := min(len(holders)-quorum+1, len(holders))
		victims = victims[:0]
		for _, i := range rng.Perm(len(holders))[:max(need, 1)] {
			victims = append(victims, holders[i])
		}
		a := aimAt(e)
		a.Node = nodeNames(victims)
		aimed(mark, a)
	}
	if f.delayed {
		// All down together, back only once every lease they held has
		// expired.
		for i, n := range victims {
			if err := f.kill(n); err != nil {
				return err
			}
			if i == 0 {
				mark.Began(nodeNames(victims) + " (killed)")
			}
		}
		f.back = time.Now().Add(downtime(t))
		if !sleep.For(ctx, downtime(t)) {
			return nil // Heal restarts them, past the TTL
		}
		return f.restartDown(ctx, mark, fmt.Sprintf("restarted empty after %v", downtime(t)))
	}
	for i, n := range victims {
		if err := f.kill(n); err != nil {
			return err
		}
		if i == 0 {
			mark.Began(n.Name + " (killed)")
		} else {
			mark.Step(n.Name + " killed")
		}
		how := "restarted empty at once"
		if f.fsync {
			how = "restarted from its AOF (fsync always)"
		}
		if err := f.restartDown(ctx, mark, how); err != nil {
			return err
		}
	}
	return nil
}

// lease waits for a live lease to aim at and returns it with the masters
// that hold it. restart-empty prefers, for a few TTLs, one held on no more
// than a bare majority (one restart breaks it); then any live lease will
// do. The controls take the first live lease.
func (f *restartNode) lease(ctx context.Context, t *Target, rng *rand.Rand, nodes []*cluster.Node) (ProtocolEvent, []*cluster.Node, error) {
	if !f.delayed && !f.fsync {
		quorum := len(t.Topology.Nodes())/2 + 1
		narrow := *t
		narrow.Patience = min(t.patience()/2, 2*t.TTL)
		e, h, err := liveLease(ctx, &narrow, rng, nodes, true, func(_ ProtocolEvent, h []*cluster.Node) bool { return len(h) <= quorum })
		if !errors.Is(err, ErrNoTarget) {
			return e, h, err
		}
	}
	return liveLease(ctx, t, rng, nodes, true, func(ProtocolEvent, []*cluster.Node) bool { return true })
}

// kill stops n with SIGKILL; unless the fault keeps an AOF, n comes back
// with nothing.
func (f *restartNode) kill(n *cluster.Node) error {
	if !f.fsync {
		n.SetPersistence(cluster.PersistNone)
	}
	if err := n.Kill(); err != nil {
		return err
	}
	f.down = append(f.down, n)
	return nil
}

// restartDown starts every node this fault killed again.
func (f *restartNode) restartDown(ctx context.Context, mark Marker, how string) error {
	for len(f.down) > 0 {
		n := f.down[0]
		if err := n.Restart(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("restart %s: %w", n.Name, err)
		}
		f.down = f.down[1:]
		mark.Step(n.Name + " " + how)
	}
	return nil
}

// Heal makes sure every node runs again; a delayed restart still waits out
// the TTL, also when the run is ending, since clients finish their last
// iteration after the schedule stops.
func (f *restartNode) Heal(ctx context.Context, t *Target) error {
	if len(f.down) == 0 {
		return nil
	}
	if f.delayed {
		if d := time.Until(f.back); d > 0 && !sleep.For(ctx, d) {
			return ctx.Err()
		}
	}
	var errs []error
	for _, n := range f.down {
		if n.Pid() == 0 {
			if err := n.Restart(ctx); err != nil {
				errs = append(errs, fmt.Errorf("restart %s: %w", n.Name, err))
			}
		}
	}
	f.down = nil
	return errors.Join(errs...)
}

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

func newPartitionMinority(o Options) Fault { return newQuorumPartition("partition-minority", false, o) }
func newPartitionMajority(o Options) Fault { return newQuorumPartition("partition-majority", true, o) }

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
	if !t.aiming() || t.Clients == nil || t.Clients.Count() == 0 {
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
	if t.Clients == nil {
		return errors.New("needs clients")
	}
	return nil
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
