// The cluster-failover-lossy fault: the Redis Cluster form of
// failover-lossy, a replica promoted without a lock written on its master
// only, with its entry.

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/sleep"
)

// clusterFailoverLossy is the Redis Cluster form of failover-lossy, aimed
// at the protocol rather than at a moment: replication from a master
// holding a live lock is cut, the fault waits until a lock is written on
// that master only (present there, absent or different on its replica, with
// more than half its lease to run), and then sends CLUSTER FAILOVER FORCE
// to the replica, which takes the master's slots without asking it, so
// without that lock. A second client then takes the lock from the promoted
// replica while the first holder's lease still runs: a double holder within
// the lease for every single-instance lock. At heal the cut is removed and
// the old master, which saw its slots go to a newer epoch, rejoins as a
// replica of the promoted one (and drops the lost lock with its data).
type clusterFailoverLossy struct {
	cut           *toxicFault
	old, promoted *cluster.Node
}

// nameClusterFailoverLossy is the fault's one name: its entry's and its own.
const nameClusterFailoverLossy = "cluster-failover-lossy"

// clusterFailoverLossyEntry is the registry entry of cluster-failover-lossy, which reads no settings of its own.
func clusterFailoverLossyEntry() Entry {
	return Entry{Name: nameClusterFailoverLossy,
		Summary: "Redis Cluster: cut replication from a master holding a lock, wait for a lock written there only, CLUSTER FAILOVER FORCE its replica",
		New:     newClusterFailoverLossy}
}

func newClusterFailoverLossy(Options) Fault { return &clusterFailoverLossy{} }

func (f *clusterFailoverLossy) Name() string { return nameClusterFailoverLossy }

func (f *clusterFailoverLossy) Available(t *Target) error {
	if _, err := needCluster(t); err != nil {
		return err
	}
	if t.Network == nil {
		return errors.New("needs the toxiproxy network")
	}
	return nil
}

func (f *clusterFailoverLossy) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	st, sh, held, err := aim(ctx, t, rng)
	if err != nil {
		return err
	}
	if len(sh.Replicas) == 0 {
		return fmt.Errorf("master %s has no replica to promote", sh.Master.Name)
	}
	m, r := sh.Master, sh.Replicas[rng.Intn(len(sh.Replicas))]
	f.old, f.promoted = nil, nil
	f.cut = cutLinks(f.Name(), func() []*cluster.Path { return st.ReplicationPaths(m) })
	if err := f.cut.Start(ctx, t, rng, quiet{}); err != nil {
		f.cut = nil
		return fmt.Errorf("cut replication from %s: %w", m.Name, err)
	}
	mark.Began(fmt.Sprintf("replication from %s cut (it holds %s)", m.Name, held))
	key, err := writtenOnMasterOnly(ctx, st, m, r, t.TTL/2, aimWait(t.TTL))
	if ctx.Err() != nil {
		mark.Step("the run ended before the failover")
		return nil // the cut is healed as usual; nothing failed
	}
	what := key + " written on " + m.Name + " only"
	if err != nil {
		what = err.Error() // fail over all the same: the cut still loses writes
	}
	if err := st.ForceFailover(ctx, r, promoteTimeout); err != nil {
		if ctx.Err() != nil {
			// As above: the heal settles whatever the promotion left.
			mark.Step("the run ended during the failover")
			return nil
		}
		return err
	}
	f.old, f.promoted = m, r
	mark.Step(fmt.Sprintf("CLUSTER FAILOVER FORCE: %s promoted over %s (%s)", r.Name, m.Name, what))
	return nil
}

// writtenOnMasterOnly waits for a live lock on m, with more than left of
// its lease to run, that its replica r does not have (absent, or another
// value: DUMP compares the value, not the TTL).
func writtenOnMasterOnly(ctx context.Context, st cluster.ShardedTopology, m, r *cluster.Node, left, timeout time.Duration) (string, error) {
	mc, rc := st.Control(m), st.Control(r)
	deadline := time.Now().Add(timeout)
	for {
		keys, err := liveKeys(ctx, mc, left)
		if err != nil {
			return "", fmt.Errorf("live locks on %s: %w", m.Name, err)
		}
		for _, k := range keys {
			mine, err := mc.Dump(ctx, k).Result()
			if err != nil {
				continue // expired or deleted since
			}
			theirs, err := rc.Dump(ctx, k).Result()
			if errors.Is(err, redis.Nil) || (err == nil && theirs != mine) {
				return k, nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no lock written on %s only within %v", m.Name, timeout)
		}
		if !sleep.For(ctx, 10*time.Millisecond) {
			return "", ctx.Err()
		}
	}
}

// Heal removes the cut and waits until the cluster has settled with the old
// master a replica of the promoted one.
func (f *clusterFailoverLossy) Heal(ctx context.Context, t *Target) error {
	st, err := needCluster(t)
	if err != nil {
		return err
	}
	err = errors.Join(healCut(ctx, t, &f.cut), settleCluster(ctx, st, f.old, f.promoted))
	f.old, f.promoted = nil, nil
	return err
}
