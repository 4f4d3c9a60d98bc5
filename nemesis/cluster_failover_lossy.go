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
// at the protocol rather than at a moment: replication from a key's master
// is cut as a client tries the key while nobody holds it and its replica
// lacks it (blind, or for a lock without "attempt" points: from a master
// holding a live lock), the fault waits until a lock is written on that
// master only (present there, absent or different on its replica, with
// more than half its lease to run), and then sends CLUSTER FAILOVER TAKEOVER
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
		Summary:    "Redis Cluster: cut replication from a master holding a lock, wait for a lock written there only, CLUSTER FAILOVER TAKEOVER its replica",
		New:        newClusterFailoverLossy,
		Topologies: []string{"cluster"}}
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

// Aims implements Aiming: aimed, the fault cuts at a client's attempt.
func (f *clusterFailoverLossy) Aims() bool { return true }

func (f *clusterFailoverLossy) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	f.old, f.promoted = nil, nil
	st, err := needCluster(t)
	if err != nil {
		return err
	}
	if t.aiming() {
		m, r, key, err := f.cutAtAttempt(ctx, t, st, rng)
		if err == nil {
			mark.Began(fmt.Sprintf("replication from %s cut as a client tried %s, which no replica has", m.Name, key))
			return f.promote(ctx, t, st, mark, m, r, key)
		}
		if !errors.Is(err, ErrNoTarget) {
			return err
		}
	}
	_, sh, held, err := aim(ctx, t, rng)
	if err != nil {
		return err
	}
	if len(sh.Replicas) == 0 {
		return fmt.Errorf("master %s has no replica to promote", sh.Master.Name)
	}
	m, r := sh.Master, sh.Replicas[rng.Intn(len(sh.Replicas))]
	f.cut = cutLinks(f.Name(), func() []*cluster.Path { return st.ReplicationPaths(m) })
	if err := f.cut.Start(ctx, t, rng, quiet{}); err != nil {
		f.cut = nil
		return fmt.Errorf("cut replication from %s: %w", m.Name, err)
	}
	mark.Began(fmt.Sprintf("replication from %s cut (it holds %s)", m.Name, held))
	return f.promote(ctx, t, st, mark, m, r, "")
}

// cutAtAttempt cuts replication from the master of a key as a client
// tries to take it while nobody holds it and no replica has it (see
// cutAtFreeAttempt): the lock it is about to write exists on that master
// only, and the replica promoted next will grant the key at once. It
// returns the master, the replica to promote (seeded) and the key.
func (f *clusterFailoverLossy) cutAtAttempt(ctx context.Context, t *Target, st cluster.ShardedTopology, rng *rand.Rand) (m, r *cluster.Node, key string, err error) {
	// Read before the wait, so that the cut at the attempt is quick:
	// other clients' first attempts come at the same moment.
	shards, err := st.Shards(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	_, err = cutAtFreeAttempt(ctx, t, func(e ProtocolEvent) error {
		sh, err := shardOf(ctx, st, shards, e.StoredKey())
		if err != nil {
			return err
		}
		if len(sh.Replicas) == 0 {
			return fmt.Errorf("master %s has no replica to promote", sh.Master.Name)
		}
		m, r, key = sh.Master, sh.Replicas[rng.Intn(len(sh.Replicas))], e.StoredKey()
		f.cut = cutLinks(f.Name(), func() []*cluster.Path { return st.ReplicationPaths(m) })
		return f.cut.Start(context.WithoutCancel(ctx), t, nil, quiet{})
	}, func(key string) bool {
		_, err := st.Control(r).Dump(ctx, key).Result()
		return !errors.Is(err, redis.Nil)
	}, func() error { return healCut(context.WithoutCancel(ctx), t, &f.cut) })
	if err != nil {
		if herr := healCut(context.WithoutCancel(ctx), t, &f.cut); herr != nil {
			err = errors.Join(err, herr)
		}
		return nil, nil, "", err
	}
	return m, r, key, nil
}

// shardOf is the shard among shards that serves key's slot.
func shardOf(ctx context.Context, st cluster.ShardedTopology, shards []cluster.Shard, key string) (cluster.Shard, error) {
	if len(shards) == 0 {
		return cluster.Shard{}, errors.New("no shards")
	}
	slot, err := st.Control(shards[0].Master).ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return cluster.Shard{}, fmt.Errorf("slot of %s: %w", key, err)
	}
	for _, sh := range shards {
		for _, rg := range sh.Slots {
			if int(slot) >= rg[0] && int(slot) <= rg[1] {
				return sh, nil
			}
		}
	}
	return cluster.Shard{}, fmt.Errorf("no master serves slot %d of %s", slot, key)
}

// promote waits, with replication from m cut, for a lock written on m
// only (on key, or any key when it is ""), then promotes r over m with
// CLUSTER FAILOVER TAKEOVER.
func (f *clusterFailoverLossy) promote(ctx context.Context, t *Target, st cluster.ShardedTopology, mark Marker, m, r *cluster.Node, key string) error {
	key, err := writtenOnMasterOnly(ctx, st, m, r, key, t.TTL/2, aimWait(t.TTL))
	if ctx.Err() != nil {
		// The cut is healed as usual; without the failover it lost nothing.
		return fmt.Errorf("%w: the run ended before the failover", ErrNoEffect)
	}
	what := key + " written on " + m.Name + " only"
	if err != nil {
		what = err.Error() // fail over all the same: the cut still loses writes
	}
	if err := st.ForceFailover(ctx, r, promoteTimeout); err != nil {
		// The heal settles whatever the promotion left.
		if ctx.Err() != nil {
			mark.Step("the run ended during the failover")
			return nil // the takeover was asked for and may have been made
		}
		return fmt.Errorf("%w: %w", ErrNoEffect, err)
	}
	f.old, f.promoted = m, r
	mark.Step(fmt.Sprintf("CLUSTER FAILOVER TAKEOVER: %s promoted over %s (%s)", r.Name, m.Name, what))
	return nil
}

// writtenOnMasterOnly waits for a live lock on m (on only, when it is
// not ""), with more than left of its lease to run, that its replica r
// does not have (absent, or another value: DUMP compares the value, not
// the TTL).
func writtenOnMasterOnly(ctx context.Context, st cluster.ShardedTopology, m, r *cluster.Node, only string, left, timeout time.Duration) (string, error) {
	mc, rc := st.Control(m), st.Control(r)
	deadline := time.Now().Add(timeout)
	for {
		keys, err := liveKeys(ctx, mc, left)
		if err != nil {
			return "", fmt.Errorf("live locks on %s: %w", m.Name, err)
		}
		for _, k := range keys {
			if only != "" && k != only {
				continue
			}
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
