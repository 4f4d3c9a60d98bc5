// The slot-migration fault: resharding moves the slot of a live lock to
// another master while clients follow ASK redirects, a move a lock is
// expected to survive, with its entry.

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"

	"github.com/locktorture/locktorture/cluster"
)

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

// nameSlotMigration is the fault's one name: its entry's and its own.
const nameSlotMigration = "slot-migration"

// slotMigrationEntry is the registry entry of slot-migration, which reads no settings of its own.
func slotMigrationEntry() Entry {
	return Entry{Name: nameSlotMigration,
		Summary:    "Redis Cluster: migrate the slot of a live lock to another master (IMPORTING/MIGRATING, MIGRATE, ASK redirects; SETSLOT NODE at heal)",
		New:        newSlotMigration,
		Topologies: []string{"cluster"}}
}

func newSlotMigration(Options) Fault { return &slotMigration{slot: -1} }

func (f *slotMigration) Name() string { return nameSlotMigration }

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
