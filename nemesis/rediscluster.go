// What the Redis Cluster faults share: finding a master that holds a live
// lock and one of its keys, and waiting for the cluster to settle at heal.
// The faults themselves (cluster_failover_lossy.go, slot_migration.go) each
// have a file of their own.

package nemesis

import (
	"context"
	"fmt"
	"math/rand"
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
