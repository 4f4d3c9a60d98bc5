package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/sleep"
)

// How long a Redis Cluster fault waits for a promotion, and for the cluster
// to settle at heal.
const (
	promoteTimeout       = 10 * time.Second
	clusterSettleTimeout = 30 * time.Second
)

func needCluster(t *Target) (cluster.ShardedTopology, error) {
	return needTopology[cluster.ShardedTopology](t, "needs a Redis Cluster (--topology cluster)")
}

// aimWait bounds how long a cluster fault waits for the lock traffic it
// aims at (a live lock on a master, a lock written on a master only): a
// few leases, and never less than a few seconds.
func aimWait(ttl time.Duration) time.Duration { return max(3*ttl, 5*time.Second) }

// liveKeys lists the keys on c with a lease of more than left to run: the
// live locks (keys without a TTL are no lease).
func liveKeys(ctx context.Context, c *redis.Client, left time.Duration) ([]string, error) {
	var out []string
	it := c.Scan(ctx, 0, "", 1000).Iterator()
	for it.Next(ctx) {
		ttl, err := c.PTTL(ctx, it.Val()).Result()
		if err != nil {
			return nil, fmt.Errorf("PTTL %s: %w", it.Val(), err)
		}
		if ttl > left {
			out = append(out, it.Val())
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("SCAN: %w", err)
	}
	return out, nil
}

// aim is where a Redis Cluster fault strikes: a master holding a live lock
// and one of its live keys (see liveShard), with the run's cluster, which
// the fault then acts on.
func aim(ctx context.Context, t *Target, rng *rand.Rand) (cluster.ShardedTopology, cluster.Shard, string, error) {
	st, err := needCluster(t)
	if err != nil {
		return nil, cluster.Shard{}, "", err
	}
	sh, key, err := liveShard(ctx, st, rng, t.TTL)
	return st, sh, key, err
}

// liveShard waits until some master holds a live lock and picks one such
// master (seeded among them) and one of its live keys: a fault that hits a
// master holding nobody's lock shows nothing.
func liveShard(ctx context.Context, st cluster.ShardedTopology, rng *rand.Rand, ttl time.Duration) (cluster.Shard, string, error) {
	deadline := time.Now().Add(aimWait(ttl))
	for {
		shards, err := st.Shards(ctx)
		if err != nil {
			return cluster.Shard{}, "", err
		}
		var hit []cluster.Shard
		var keys [][]string
		for _, sh := range shards {
			ks, err := liveKeys(ctx, st.Control(sh.Master), 0)
			if err != nil {
				return cluster.Shard{}, "", fmt.Errorf("live locks on %s: %w", sh.Master.Name, err)
			}
			if len(ks) > 0 {
				hit, keys = append(hit, sh), append(keys, ks)
			}
		}
		if len(hit) > 0 {
			i := rng.Intn(len(hit))
			return hit[i], keys[i][rng.Intn(len(keys[i]))], nil
		}
		if time.Now().After(deadline) {
			return cluster.Shard{}, "", fmt.Errorf("no master held a live lock within %v", aimWait(ttl))
		}
		if !sleep.For(ctx, 20*time.Millisecond) {
			return cluster.Shard{}, "", ctx.Err()
		}
	}
}

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

func newClusterFailoverLossy(Options) Fault { return &clusterFailoverLossy{} }

func (f *clusterFailoverLossy) Name() string { return "cluster-failover-lossy" }

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

// settleCluster waits until the cluster has settled and, when old is set,
// old is a replica of master.
func settleCluster(ctx context.Context, st cluster.ShardedTopology, old, master *cluster.Node) error {
	deadline := time.Now().Add(clusterSettleTimeout)
	for {
		err := st.Settle(ctx, time.Until(deadline))
		if err == nil && old != nil {
			err = replicaOf(ctx, st, old, master)
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || !sleep.For(ctx, 100*time.Millisecond) {
			return err
		}
	}
}

func replicaOf(ctx context.Context, st cluster.ShardedTopology, r, m *cluster.Node) error {
	shards, err := st.Shards(ctx)
	if err != nil {
		return err
	}
	for _, sh := range shards {
		for _, x := range sh.Replicas {
			if x == r && sh.Master == m {
				return nil
			}
		}
	}
	return fmt.Errorf("%s has not rejoined as a replica of %s", r.Name, m.Name)
}

// slotMigration moves the slot of a live lock to another master, the way
// resharding does: CLUSTER SETSLOT IMPORTING on the target and MIGRATING
// on the source, MIGRATE of the slot's keys (each with its remaining TTL),
// and at heal SETSLOT NODE. While the slot is migrating (the whole time the
// fault is active) clients are redirected with ASK for every key no longer
// on the source, so the lock's acquires, renewals and releases go to the
// target. It is expected to hold: a lock key keeps its token and TTL
// across the move, and a key is served by exactly one node at a time.
type slotMigration struct {
	from, to *cluster.Node
	slot     int
}

func newSlotMigration(Options) Fault { return &slotMigration{slot: -1} }

func (f *slotMigration) Name() string { return "slot-migration" }

func (f *slotMigration) Available(t *Target) error {
	_, err := needCluster(t)
	return err
}

func (f *slotMigration) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	st, sh, key, err := aim(ctx, t, rng)
	if err != nil {
		return err
	}
	shards, err := st.Shards(ctx)
	if err != nil {
		return err
	}
	var others []*cluster.Node
	for _, o := range shards {
		if o.Master != sh.Master {
			others = append(others, o.Master)
		}
	}
	if len(others) == 0 {
		return errors.New("no other master to migrate to")
	}
	src, dst := sh.Master, others[rng.Intn(len(others))]
	slot, err := st.Control(src).ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return fmt.Errorf("CLUSTER KEYSLOT %s: %w", key, err)
	}
	s := int(slot)
	if err := setSlot(ctx, st, dst, s, "IMPORTING", st.NodeID(src)); err != nil {
		return err
	}
	if err := setSlot(ctx, st, src, s, "MIGRATING", st.NodeID(dst)); err != nil {
		return errors.Join(err, setSlot(context.WithoutCancel(ctx), st, dst, s, "STABLE", ""))
	}
	f.from, f.to, f.slot = src, dst, s
	mark.Began(fmt.Sprintf("slot %d (%s) migrating from %s to %s", s, key, src.Name, dst.Name))
	n, err := migrateKeys(ctx, st, src, dst, s)
	if err != nil {
		return err
	}
	mark.Step(fmt.Sprintf("%d keys of slot %d moved to %s; clients follow ASK until heal", n, s, dst.Name))
	return nil
}

func setSlot(ctx context.Context, st cluster.ShardedTopology, n *cluster.Node, slot int, args ...string) error {
	cmd := []any{"CLUSTER", "SETSLOT", slot}
	for _, a := range args {
		if a != "" {
			cmd = append(cmd, a)
		}
	}
	if err := st.Control(n).Do(ctx, cmd...).Err(); err != nil {
		return fmt.Errorf("CLUSTER SETSLOT %d %v on %s: %w", slot, args, n.Name, err)
	}
	return nil
}

// migrateKeys moves every key of slot from src to dst, TTL and all, and
// returns how many it moved.
func migrateKeys(ctx context.Context, st cluster.ShardedTopology, src, dst *cluster.Node, slot int) (int, error) {
	sc := st.Control(src)
	moved := 0
	for {
		keys, err := sc.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		if err != nil {
			return moved, fmt.Errorf("CLUSTER GETKEYSINSLOT %d on %s: %w", slot, src.Name, err)
		}
		if len(keys) == 0 {
			return moved, nil
		}
		host, port := st.PeerAddr(dst)
		cmd := []any{"MIGRATE", host, strconv.Itoa(port), "", 0, 400, "KEYS"}
		for _, k := range keys {
			cmd = append(cmd, k)
		}
		// NOKEY: the keys expired or were released in between.
		if err := sc.Do(ctx, cmd...).Err(); err != nil && err.Error() != "NOKEY" {
			return moved, fmt.Errorf("MIGRATE slot %d from %s to %s: %w", slot, src.Name, dst.Name, err)
		}
		moved += len(keys)
	}
}

// Heal moves what is left of the slot and hands it to the target: SETSLOT
// NODE on the target first, then the source, then every other master.
func (f *slotMigration) Heal(ctx context.Context, t *Target) error {
	st, err := needCluster(t)
	if err != nil {
		return err
	}
	if f.slot < 0 {
		return nil
	}
	src, dst, s := f.from, f.to, f.slot
	f.from, f.to, f.slot = nil, nil, -1
	if _, err := migrateKeys(ctx, st, src, dst, s); err != nil {
		return err
	}
	id := st.NodeID(dst)
	var errs []error
	for _, n := range []*cluster.Node{dst, src} {
		if err := setSlot(ctx, st, n, s, "NODE", id); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if shards, err := st.Shards(ctx); err == nil {
		for _, sh := range shards {
			if sh.Master != src && sh.Master != dst {
				_ = setSlot(ctx, st, sh.Master, s, "NODE", id) // gossip would tell it too
			}
		}
	}
	return settleCluster(ctx, st, nil, nil)
}
