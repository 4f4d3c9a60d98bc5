// The Sentinel failover faults: failover, failover-lossy and
// sentinel-failover, one type whose variants differ in how the newest locks
// are lost when a replica takes over, with their entries, and what the
// Sentinel faults share (finding the topology and its master, healing a
// replication cut).

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/sleep"
)

// How long a heal waits for Sentinel to finish a failover, and then for the
// replicas to follow the new master. A failed failover attempt is retried
// after twice the failover timeout, so the first bound leaves room for one.
const (
	switchTimeout = 4*cluster.SentinelFailoverTimeout + 2*cluster.SentinelDownAfter
	settleTimeout = 20 * time.Second
)

func needSentinel(t *Target) (cluster.FailoverTopology, error) {
	return needTopology[cluster.FailoverTopology](t, "needs a master under Sentinel the harness runs (--topology sentinel, on --backend local or docker)")
}

// sentinelMaster is where a Sentinel fault starts: the run's Sentinel
// topology and the master it has now.
func sentinelMaster(ctx context.Context, t *Target) (cluster.FailoverTopology, *cluster.Node, error) {
	ft, err := needSentinel(t)
	if err != nil {
		return nil, nil, err
	}
	m, err := ft.Master(ctx)
	return ft, m, err
}

// needTopology returns the run's topology as the kind T a fault acts
// through, or, where it is not one, an error saying what the fault needs.
func needTopology[T cluster.Topology](t *Target, needs string) (T, error) {
	tt, ok := t.Topology.(T)
	if !ok {
		return tt, errors.New(needs)
	}
	return tt, nil
}

// failover makes Sentinel replace the master. Replication is asynchronous:
// a lock key the master acknowledged may not have reached the replica that
// wins, and a second client then takes a lock the first still holds within
// its lease. Every single-instance lock is exposed to it; the variants
// differ in how the key is lost:
//
//   - failover: the master is killed (SIGKILL) or paused (SIGSTOP), so only
//     what was in flight on the replication link at that instant is lost;
//   - failover-lossy: replication from the master is cut first and the
//     master fails a little later, so every lock taken in between is
//     missing on the replica that wins;
//   - sentinel-failover: SENTINEL FAILOVER promotes a replica while the old
//     master still serves clients that have not heard of the switch, and
//     the other replica, not yet re-pointed, still acknowledges what they
//     write there; all of it is lost when both follow the new master.
//
// Aimed (the default), failover-lossy cuts replication as a client tries a
// key that no replica has, and fails the master over (SENTINEL FAILOVER,
// the fastest switch) right after a live lock has been written on it and
// on no replica, then makes the old master a replica at its next grant
// (see demoteAtGrant); blind, it kills or pauses it half a TTL after the
// cut.
//
// At heal, once every Sentinel agrees on the new master, the old master
// comes back (resumed or restarted with its persistence) as a replica of it,
// and the cut, if any, is removed.
type failover struct {
	name   string
	cut    bool // cut replication from the master before it fails
	manual bool // SENTINEL FAILOVER instead of a master failure

	old    *cluster.Node // the master at Start, nil once there is nothing to wait for
	paused bool          // old was paused rather than killed
	toxics *toxicFault   // the cut, if any
	// failed receives the outcome of the delayed master failure of a
	// lossy failover (nil: it failed; else why not).
	failed chan error
	// demoted receives the outcome of an aimed failover's last step, the
	// old master made a replica (see demoteAtGrant).
	demoted chan error
}

// The names of the three variants, each written once: their entries', and
// the name each fault is built with.
const (
	nameFailover         = "failover"
	nameFailoverLossy    = "failover-lossy"
	nameSentinelFailover = "sentinel-failover"
)

// failoverEntry is the registry entry of failover, which reads no settings of its own.
func failoverEntry() Entry {
	return Entry{Name: nameFailover,
		Summary:    "kill or pause the master; Sentinel promotes a replica; the old master comes back as a replica",
		New:        newFailover,
		Topologies: []string{"sentinel"}}
}

// failoverLossyEntry is the registry entry of failover-lossy, which reads no settings of its own.
func failoverLossyEntry() Entry {
	return Entry{Name: nameFailoverLossy,
		Summary:    "cut replication from the master, then kill or pause it: the replica that wins lacks the newest locks",
		New:        newFailoverLossy,
		Topologies: []string{"sentinel"}}
}

// sentinelFailoverEntry is the registry entry of sentinel-failover, which reads no settings of its own.
func sentinelFailoverEntry() Entry {
	return Entry{Name: nameSentinelFailover,
		Summary:    "SENTINEL FAILOVER: a replica is promoted while the old master still serves some clients",
		New:        newSentinelFailover,
		Topologies: []string{"sentinel"}}
}

func newFailover(Options) Fault { return &failover{name: nameFailover} }

func newFailoverLossy(Options) Fault { return &failover{name: nameFailoverLossy, cut: true} }

func newSentinelFailover(Options) Fault { return &failover{name: nameSentinelFailover, manual: true} }

func (f *failover) Name() string { return f.name }

// Aims implements Aiming: failover-lossy waits for a lock on the master only.
func (f *failover) Aims() bool { return f.cut }

func (f *failover) Available(t *Target) error {
	if _, err := needSentinel(t); err != nil {
		return err
	}
	if f.cut && t.Network == nil {
		return errors.New("needs the toxiproxy network")
	}
	return nil
}

// lead is how long replication stays cut before the master fails: half a
// TTL, so that the holder of a lock at the failure has likely taken it
// during the cut (it exists only on the master) and its lease still runs
// when a replica takes over. Bounded so a fault stays a few seconds long.
func lead(ttl time.Duration) time.Duration {
	return min(max(ttl/2, 100*time.Millisecond), 5*time.Second)
}

// errRunEnded: the run ended before the master was due to fail.
var errRunEnded = errors.New("the run ended first")

// how a master fails
const (
	failManual = "SENTINEL FAILOVER away from"
	failPause  = "paused"
	failKill   = "killed"
)

func (f *failover) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	ft, old, err := sentinelMaster(ctx, t)
	if err != nil {
		return err
	}
	how, sentinel := failKill, rng.Intn(3)
	switch {
	case f.manual:
		how = failManual
	case rng.Intn(2) == 0:
		how = failPause
	}
	f.old, f.paused, f.toxics, f.failed, f.demoted = old, false, nil, nil, nil
	if !f.cut {
		if err := f.fail(ctx, ft, old, how, sentinel); err != nil {
			f.old = nil
			return err
		}
		mark.Began(describe(old, how))
		return nil
	}
	f.toxics = cutLinks(f.name, func() []*cluster.Path { return ft.ReplicationPaths(old) })
	if t.aiming() {
		// SENTINEL FAILOVER: no down-after wait, so the replica lacking
		// the lock takes over while its lease (and often its hold) runs,
		// and the old master serves the clients that have not heard of
		// the switch meanwhile. It goes to the Sentinel the fewest
		// clients follow, never the first: the Sentinel that leads a
		// failover announces the switch and names the new master in
		// SENTINEL MASTERS only at the failover's end, about a second
		// after the others have switched, and the clients that follow it
		// (go-redis) or read that entry (redis-py reads the first
		// Sentinel's) would keep going back to the old master until then.
		return f.failMasterOnly(ctx, t, ft, mark, old, failManual)
	}
	if err := f.toxics.Start(ctx, t, rng, quiet{}); err != nil {
		f.toxics, f.old = nil, nil
		return fmt.Errorf("cut replication from %s: %w", old.Name, err)
	}
	d := lead(t.TTL)
	mark.Began(fmt.Sprintf("replication from %s cut; %s %v later", old.Name, describe(old, how), d))
	// The fault starts with the cut (that is when locks begin to exist on
	// the master only); the master fails later, while it is active.
	f.failed = make(chan error, 1)
	go func() {
		if !sleep.For(ctx, d) {
			f.failed <- errRunEnded
			return
		}
		err := f.fail(ctx, ft, old, how, sentinel)
		if err == nil {
			mark.Step(describe(old, how))
		}
		f.failed <- err
	}()
	return nil
}

// failMasterOnly cuts replication from the master while a key is free on
// every replica (see cutWhileLacking), then fails the master over once a
// lease on that key lives on the master alone. The replica that wins then
// has no copy of the key at all, so the first client to ask it wins while
// the old master's holder still holds: the loss shows within the switch.
// Cut while a replica kept a copy, the key would stay taken on the new
// master until that copy expired (up to a TTL later), and the loss would
// need a holder still holding just then. With no lease in time it fails
// over all the same.
func (f *failover) failMasterOnly(ctx context.Context, t *Target, ft cluster.FailoverTopology,
	mark Marker, old *cluster.Node, how string) error {
	var replicas []*cluster.Node
	for _, n := range t.Topology.Nodes() {
		if n != old {
			replicas = append(replicas, n)
		}
	}
	key, err := cutWhileLacking(ctx, t, f.toxics, replicas)
	if err != nil {
		f.toxics, f.old = nil, nil
		return fmt.Errorf("cut replication from %s: %w", old.Name, err)
	}
	e, found, err := leaseWhere(ctx, t, key, func(e ProtocolEvent) bool {
		return len(leaseHolders(ctx, []*cluster.Node{old}, e.StoredKey(), e.Lease)) == 1 &&
			len(leaseHolders(ctx, replicas, e.StoredKey(), "")) == 0
	})
	leader := ft.LeastFollowed(ctx)
	sent := time.Now()
	if err == nil {
		err = f.fail(ctx, ft, old, how, leader)
	}
	if err != nil {
		f.old = nil // nothing failed over
		if herr := f.toxics.Heal(context.WithoutCancel(ctx), t); herr != nil {
			err = errors.Join(err, herr)
		}
		f.toxics = nil
		return err
	}
	if !found {
		mark.Began(fmt.Sprintf("replication from %s cut; %s with no lock granted during the cut", old.Name, describe(old, how)))
		return nil
	}
	a := aimAt(e)
	a.Node = old.Name
	aimed(mark, a)
	mark.Began(fmt.Sprintf("replication from %s cut; %s with %s's lock on it only", old.Name, describe(old, how), ClientName(e.Client)))
	if err := switchAtGrant(ctx, t, ft, old, replicas, leader, mark, sent); err != nil {
		mark.Step("the switch left to Sentinel: " + err.Error())
	}
	f.demoted = make(chan error, 1)
	go func() {
		err := demoteAtGrant(ctx, t, ft, old, mark)
		if ctx.Err() != nil {
			err = nil // the run ended first: Sentinel makes it a replica, and the heal waits for that
		}
		f.demoted <- err
	}()
	return nil
}

// demoteAtGrant makes the old master a replica of the new one right after
// it grants a lock, as Sentinel does by itself a second or so after the
// switch. A client that looks for the master only when the old one
// refuses its writes (redis-py's Sentinel pool, like most libraries) is
// granted locks there until then; turned away at its next try, it finds
// the key free on the new master while the old master's last holder still
// holds. Left to Sentinel, the demotion comes at a moment of its own, most
// often after that holder has released. The grant aimed at is one whose
// holder means to work for at least reach(TTL), long enough for a waiter
// to move; after half the wait, any. Clients that heard of the switch have
// moved already: when the old master grants nothing within a lead, the
// demotion is left to Sentinel.
func demoteAtGrant(ctx context.Context, t *Target, ft cluster.FailoverTopology, old *cluster.Node, mark Marker) error {
	m, err := namedMaster(ctx, ft, old)
	if err != nil {
		return err
	}
	p := *t
	p.Patience = lead(t.TTL)
	picky := time.Now().Add(p.Patience / 2)
	e, found, err := nextLeaseWhere(ctx, &p, "", func(e ProtocolEvent) bool {
		if e.Hold > 0 && e.Hold < reach(t.TTL) && time.Now().Before(picky) {
			return false // released before a waiter could move
		}
		return len(leaseHolders(ctx, []*cluster.Node{old}, e.StoredKey(), e.Lease)) == 1 &&
			len(leaseHolders(ctx, []*cluster.Node{m}, e.StoredKey(), "")) == 0
	})
	if err != nil || !found {
		return err
	}
	if err := ft.Follow(ctx, old, m); err != nil {
		return err
	}
	mark.Step(fmt.Sprintf("%s made a replica of %s right after it granted %s's lock", old.Name, m.Name, ClientName(e.Client)))
	return nil
}

// reach is how long a client turned away by a demoted master takes to
// find the new one and try the key there: its next attempt comes after the
// lock's pause (by default up to a twentieth of the TTL), then a
// reconnection and the try itself.
func reach(ttl time.Duration) time.Duration {
	return max(ttl/10, 100*time.Millisecond)
}

// namedMaster waits until every Sentinel names a master other than old
// (GET-MASTER-ADDR-BY-NAME), so that a client turned away by old is sent
// to the new master whichever Sentinel it asks. The leader's SENTINEL
// MASTERS entry still names old for a second longer; the failover goes to
// the Sentinel clients ask last for that reason (see Start). WaitSwitch
// waits longer, for the failover to end, which comes only once Sentinel
// has made old a replica itself.
func namedMaster(ctx context.Context, ft cluster.FailoverTopology, old *cluster.Node) (*cluster.Node, error) {
	deadline := time.Now().Add(switchTimeout)
	for {
		if m, err := ft.NamedByAll(ctx); err == nil && m != old {
			return m, nil
		} else if err := ft.Aborted(ctx, old); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("not every Sentinel names a master other than %s within %v", old.Name, switchTimeout)
		}
		if !sleep.For(ctx, 20*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
}

func describe(n *cluster.Node, how string) string {
	if how == failManual {
		return how + " " + n.Name
	}
	return n.Name + " " + how
}

func (f *failover) fail(ctx context.Context, ft cluster.FailoverTopology, old *cluster.Node, how string, sentinel int) error {
	switch how {
	case failManual:
		return ft.ManualFailover(ctx, sentinel)
	case failPause:
		if err := old.Pause(); err != nil {
			return err
		}
		f.paused = true
		return nil
	default:
		return old.Kill()
	}
}

// Heal waits for Sentinel to finish the failover, brings the old master back
// as a replica of the new one, removes the cut and waits until every
// replica follows the new master.
func (f *failover) Heal(ctx context.Context, t *Target) error {
	ft, err := needSentinel(t)
	if err != nil {
		return err
	}
	var errs []error
	old := f.old
	if f.failed != nil {
		if err := <-f.failed; err != nil {
			// Only the cut took place, which loses nothing by itself.
			errs = append(errs, fmt.Errorf("%w: fail %s: %w", ErrNoEffect, old.Name, err))
			old = nil // nothing failed over
		}
		f.failed = nil
	}
	f.old = nil
	if f.demoted != nil {
		// A failover Sentinel aborted: the wait for the switch says so.
		if err := <-f.demoted; err != nil && !errors.Is(err, cluster.ErrNoFailover) {
			errs = append(errs, fmt.Errorf("make %s a replica: %w", old.Name, err))
		}
		f.demoted = nil
	}
	if old != nil {
		// Wait for the switch before the old master can answer again, or
		// Sentinel would simply see it back (and a failover still under
		// way would be disturbed).
		if _, err := ft.WaitSwitch(ctx, old, switchTimeout); err != nil {
			errs = append(errs, noSwitch(err))
		}
		if f.paused {
			if err := old.Resume(); err != nil {
				errs = append(errs, err)
			}
		}
		if old.Pid() == 0 {
			if err := old.Restart(ctx); err != nil {
				errs = append(errs, fmt.Errorf("restart %s: %w", old.Name, err))
			}
		}
	}
	f.paused = false
	errs = append(errs, healCut(ctx, t, &f.toxics), ft.Settle(ctx, settleTimeout))
	return errors.Join(errs...) // drops the nils
}

// noSwitch is the error of a wait for a failover's switch: one that says
// Sentinel never failed the master over (a failover it aborted) means the
// fault never took effect.
func noSwitch(err error) error {
	if errors.Is(err, cluster.ErrNoFailover) {
		return fmt.Errorf("%w: %w", ErrNoEffect, err)
	}
	return err
}

// healCut removes the cut *cut, if any, and forgets it, so that a second
// Heal has nothing left to remove.
func healCut(ctx context.Context, t *Target, cut **toxicFault) error {
	if *cut == nil {
		return nil
	}
	err := (*cut).Heal(ctx, t)
	*cut = nil
	return err
}
