// The Redlock restart faults: restart-empty, and its two controls
// restart-delayed and restart-fsync, one type that kills masters holding a
// live lease and brings them back with or without the locks they
// acknowledged (the seed's restart problem), with their entries.

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/sleep"
)

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

// The names of the three variants, each written once: their entries', and
// the name each fault is built with.
const (
	nameRestartEmpty   = "restart-empty"
	nameRestartDelayed = "restart-delayed"
	nameRestartFsync   = "restart-fsync"
)

// restartEmptyEntry is the registry entry of restart-empty, which reads no settings of its own.
func restartEmptyEntry() Entry {
	return Entry{Name: nameRestartEmpty,
		Summary:    "redlock: SIGKILL a master and restart it at once with no persistence: it forgets the locks it acknowledged",
		New:        newRestartEmpty,
		Topologies: []string{"redlock"}}
}

// restartDelayedEntry is the registry entry of restart-delayed, which reads no settings of its own.
func restartDelayedEntry() Entry {
	return Entry{Name: nameRestartDelayed,
		Summary:    "redlock control: SIGKILL a master, restart it empty only after the TTL has passed",
		New:        newRestartDelayed,
		Topologies: []string{"redlock"}}
}

// restartFsyncEntry is the registry entry of restart-fsync, which reads no settings of its own.
func restartFsyncEntry() Entry {
	return Entry{Name: nameRestartFsync,
		Summary:    "redlock control: every master runs AOF appendfsync always; SIGKILL one and restart it at once",
		New:        newRestartFsync,
		Topologies: []string{"redlock"}}
}

func newRestartEmpty(Options) Fault   { return &restartNode{name: nameRestartEmpty} }
func newRestartDelayed(Options) Fault { return &restartNode{name: nameRestartDelayed, delayed: true} }
func newRestartFsync(Options) Fault   { return &restartNode{name: nameRestartFsync, fsync: true} }

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
	// All down together and back together: one restart's time (about a
	// tenth of a second) rather than one a victim, so the lease aimed at
	// is still held, in most holds, when its quorum comes back without it.
	for i, n := range victims {
		if err := f.kill(n); err != nil {
			return err
		}
		if i == 0 {
			mark.Began(nodeNames(victims) + " (killed)")
		}
	}
	how := "restarted empty at once"
	if f.fsync {
		how = "restarted from its AOF (fsync always)"
	}
	return f.restartDown(ctx, mark, how)
}

// lease waits for a live lease to aim at and returns it with the masters
// that hold it. restart-empty prefers, for half a TTL, a lease just granted
// (its holder is then likely to hold on past the restart, when a waiter
// takes the key from the emptied majority) or one held on no more than a
// bare majority (one restart breaks it); then any live lease will do. The
// controls take the first live lease.
func (f *restartNode) lease(ctx context.Context, t *Target, rng *rand.Rand, nodes []*cluster.Node) (ProtocolEvent, []*cluster.Node, error) {
	if !f.delayed && !f.fsync {
		quorum := len(t.Topology.Nodes())/2 + 1
		narrow := *t
		narrow.Patience = min(t.patience()/2, t.TTL/2)
		young := max(t.TTL/20, 20*time.Millisecond)
		e, h, err := liveLease(ctx, &narrow, rng, nodes, true, func(e ProtocolEvent, h []*cluster.Node) bool {
			return len(h) <= quorum || time.Since(e.At) <= young
		})
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

// restartDown starts every node this fault killed again, all at once, and
// marks them back in order once all are. Those that fail to start stay
// down for Heal.
func (f *restartNode) restartDown(ctx context.Context, mark Marker, how string) error {
	errs := make([]error, len(f.down))
	var wg sync.WaitGroup
	for i, n := range f.down {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = n.Restart(context.WithoutCancel(ctx)); errs[i] != nil {
				errs[i] = fmt.Errorf("restart %s: %w", n.Name, errs[i])
			}
		}()
	}
	wg.Wait()
	var still []*cluster.Node
	for i, n := range f.down {
		if errs[i] != nil {
			still = append(still, n)
		} else {
			mark.Step(n.Name + " " + how)
		}
	}
	f.down = still
	return errors.Join(errs...)
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
