// The failover-behind fault: the failover a replica's acknowledgement
// (token-wait's WAIT 1) does not survive, with its entry.

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

// priorityTimeout bounds the wait for every Sentinel to see a replica's new
// priority (it reads replicas' INFO every second here).
const priorityTimeout = 5 * time.Second

// failoverBehind is the failover that a replica acknowledgement does not
// survive (token-wait's WAIT 1): replication to one replica is cut, the
// other replica, which still acknowledges every lock, is made unpromotable
// (replica-priority 0), and once a live lock is on the master and that
// replica only, SENTINEL FAILOVER promotes the replica without it. The lock
// counted an acknowledgement from a replica that could not win; the next
// client takes the key from the new master within the first one's lease.
// Sentinel may prefer any replica (priority, offset, a replica cut off from
// it), which is what the priority stands for here.
//
// Aimed (the default), the failover follows such a lock; blind, it comes
// half a TTL after the cut. At heal, once every Sentinel names the new
// master, the cut goes, the replicas settle, and the priority comes back.
type failoverBehind struct {
	ahead    *cluster.Node // made unpromotable; nil when nothing is to undo
	priority int           // ahead's priority before
	old      *cluster.Node // the master at Start, nil when it did not fail over
	cut      *toxicFault
}

// nameFailoverBehind is the fault's one name: its entry's and its own.
const nameFailoverBehind = "failover-behind"

// failoverBehindEntry is the registry entry of failover-behind, which reads no settings of its own.
func failoverBehindEntry() Entry {
	return Entry{Name: nameFailoverBehind,
		Summary:    "cut replication to one replica, make the other unpromotable, SENTINEL FAILOVER once a lock is on the master and that replica only: the one without it wins",
		New:        newFailoverBehind,
		Topologies: []string{"sentinel"}}
}

func newFailoverBehind(Options) Fault { return &failoverBehind{} }

func (f *failoverBehind) Name() string { return nameFailoverBehind }

// Aims implements Aiming: it waits for a lock on the master and one replica.
func (f *failoverBehind) Aims() bool { return true }

func (f *failoverBehind) Available(t *Target) error {
	if _, err := needSentinel(t); err != nil {
		return err
	}
	if t.Network == nil {
		return errors.New("needs the toxiproxy network")
	}
	if len(t.Topology.Nodes()) < 3 {
		return errors.New("needs a master with two replicas")
	}
	return nil
}

func (f *failoverBehind) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	ft, old, err := sentinelMaster(ctx, t)
	if err != nil {
		return err
	}
	var replicas []*cluster.Node
	for _, n := range t.Topology.Nodes() {
		if n != old && n.Pid() != 0 {
			replicas = append(replicas, n)
		}
	}
	if len(replicas) < 2 {
		return fmt.Errorf("%w: %d replicas of %s run, want two", ErrNoTarget, len(replicas), old.Name)
	}
	k := rng.Intn(len(replicas))
	behind, ahead := replicas[k], replicas[(k+1)%len(replicas)]
	sentinel := rng.Intn(3)
	f.cut = cutLinks(f.Name(), func() []*cluster.Path {
		var out []*cluster.Path
		for _, p := range ft.ReplicationPaths(old) {
			if p.From == behind.Name {
				out = append(out, p)
			}
		}
		return out
	})
	aiming := t.aimsAtClients()
	key := ""
	if aiming {
		key, err = cutWhileLacking(ctx, t, f.cut, []*cluster.Node{behind})
	} else {
		err = f.cut.Start(ctx, t, rng, quiet{})
	}
	if err != nil {
		f.cut = nil
		return fmt.Errorf("cut replication from %s to %s: %w", old.Name, behind.Name, err)
	}
	prio, err := ft.SetPriority(ctx, ahead, 0, priorityTimeout)
	f.ahead, f.priority = ahead, prio
	if err != nil {
		return err
	}
	var e ProtocolEvent
	found := false
	if aiming {
		// A lease the lock counted the replica ahead for: on the
		// master and that replica, and not on the one behind.
		e, found, err = leaseWhere(ctx, t, key, func(e ProtocolEvent) bool {
			return len(leaseHolders(ctx, []*cluster.Node{old}, e.StoredKey(), e.Lease)) == 1 &&
				len(leaseHolders(ctx, []*cluster.Node{ahead}, e.StoredKey(), e.Lease)) == 1 &&
				len(leaseHolders(ctx, []*cluster.Node{behind}, e.StoredKey(), "")) == 0
		})
		if err != nil {
			return err
		}
	} else if !sleep.For(ctx, lead(t.TTL)) {
		return ctx.Err()
	}
	if err := ft.ManualFailover(ctx, sentinel); err != nil {
		return err
	}
	f.old = old
	what := fmt.Sprintf("replication from %s to %s cut, %s unpromotable; %s", old.Name, behind.Name, ahead.Name,
		describe(old, failManual))
	if found {
		a := aimAt(e)
		a.Node = old.Name
		aimed(mark, a)
		what += fmt.Sprintf(" with %s's lock on %s and %s only", ClientName(e.Client), old.Name, ahead.Name)
	}
	mark.Began(what)
	return nil
}

// Heal waits for the switch, removes the cut, lets the replicas follow the
// new master and gives the unpromotable replica its priority back.
func (f *failoverBehind) Heal(ctx context.Context, t *Target) error {
	ft, err := needSentinel(t)
	if err != nil {
		return err
	}
	var errs []error
	if f.old != nil {
		if _, err := ft.WaitSwitch(ctx, f.old, switchTimeout); err != nil {
			errs = append(errs, noSwitch(err))
		}
		f.old = nil
	}
	errs = append(errs, healCut(ctx, t, &f.cut), ft.Settle(ctx, settleTimeout))
	if f.ahead != nil {
		if _, err := ft.SetPriority(ctx, f.ahead, f.priority, priorityTimeout); err != nil {
			errs = append(errs, err)
		}
		f.ahead = nil
	}
	return errors.Join(errs...)
}
