// Tests of the Redis Cluster faults on a real cluster: they refuse other
// topologies, the lossy failover loses the lock written on the master only,
// and the slot migration moves a live lock intact.

package nemesis_test

import (
	"context"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/nemesis"
)

var clusterFaults = []string{"cluster-failover-lossy", "slot-migration"}

func TestClusterFaultsNeedRedisCluster(t *testing.T) {
	for _, name := range clusterFaults {
		err := fault(t, name).Available(&nemesis.Target{Topology: plainTopology{}, Network: &cluster.Network{}})
		if err == nil || !strings.Contains(err.Error(), "Redis Cluster") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s on a topology without Redis Cluster: %v, want a one-line refusal naming Redis Cluster", name, err)
		}
	}
}

// began is a Marker a test can wait on while Start runs elsewhere.
type began struct {
	once sync.Once
	ch   chan struct{}
	mu   sync.Mutex
	got  []string
}

func newBegan() *began { return &began{ch: make(chan struct{})} }

func (b *began) Began(target string) {
	b.Step(target)
	b.once.Do(func() { close(b.ch) })
}

func (b *began) Step(what string) {
	b.mu.Lock()
	b.got = append(b.got, what)
	b.mu.Unlock()
}

func (b *began) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.got, "; ")
}

// owner returns the shard whose master holds key.
func owner(t *testing.T, ctx context.Context, c *cluster.RedisCluster, key string) cluster.Shard {
	t.Helper()
	shards, err := c.Shards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range shards {
		if n, _ := c.Control(sh.Master).Exists(ctx, key).Result(); n == 1 {
			return sh
		}
	}
	t.Fatalf("no master holds %s", key)
	return cluster.Shard{}
}

// clean empties every master and waits for the replicas to follow.
func clean(t *testing.T, ctx context.Context, c *cluster.RedisCluster) {
	t.Helper()
	shards, err := c.Shards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range shards {
		mc := c.Control(sh.Master)
		if err := mc.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if n, _ := mc.Wait(ctx, len(sh.Replicas), 5*time.Second).Result(); int(n) != len(sh.Replicas) {
			t.Fatalf("%s: %d replicas acknowledged the flush", sh.Master.Name, n)
		}
	}
}

// TestClusterFaults runs each Redis Cluster fault by hand on a real cluster.
// The lossy failover waits for a lock written on the master only and
// promotes a replica without it; the old master rejoins as a replica and
// the lost lock is gone everywhere. The slot migration moves a live lock
// with its token and TTL, clients reach it through ASK while the slot
// moves, and after heal the target serves the slot.
func TestClusterFaults(t *testing.T) {
	ctx := context.Background()
	topo, netw := clustertest.Topology(t, "cluster", cluster.TopologyOptions{})
	c := topo.(*cluster.RedisCluster)
	target := &nemesis.Target{Topology: c, Network: netw, TTL: 2 * time.Second}
	nodes, err := c.Connect(netw.Dialer("c0"), nil)
	if err != nil {
		t.Fatal(err)
	}
	client := nodes[0]
	defer client.Close()

	t.Run("cluster-failover-lossy", func(t *testing.T) { clusterFailoverLossyCase(t, ctx, c, netw, client, target) })
	t.Run("slot-migration", func(t *testing.T) { slotMigrationCase(t, ctx, c, client, target) })
}

// clusterFailoverLossyCase: the promoted replica lacks the lock written on
// the master only, and after heal the old master is its replica.
func clusterFailoverLossyCase(t *testing.T, ctx context.Context, c *cluster.RedisCluster, netw *cluster.Network, client redis.UniversalClient, target *nemesis.Target) {
	clean(t, ctx, c)
	if err := client.Set(ctx, "lock:0", "first", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	sh := owner(t, ctx, c, "lock:0")
	if n, _ := c.Control(sh.Master).Wait(ctx, 1, 5*time.Second).Result(); n != 1 {
		t.Fatal("the replica never got the first lock")
	}
	f := fault(t, "cluster-failover-lossy")
	m := newBegan()
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx, target, rand.New(rand.NewSource(1)), m) }()
	select {
	case <-m.ch:
	case err := <-done:
		t.Fatalf("Start returned before cutting replication: %v", err)
	}
	// The next holder's lock, written while replication is cut.
	if err := c.Control(sh.Master).Set(ctx, "lock:0", "second", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("start: %v (%s)", err, m)
	}
	t.Log(m)
	if !strings.Contains(m.String(), "lock:0 written on "+sh.Master.Name+" only") {
		t.Errorf("marks %q do not name the lock written on the master only", m)
	}
	promoted := sh.Replicas[0]
	if v, _ := c.Control(promoted).Get(ctx, "lock:0").Result(); v != "first" {
		t.Errorf("the promoted replica has lock:0 = %q, want the lock from before the cut", v)
	}
	// A cluster client follows once the old master learns it was
	// demoted (over the cluster bus, not at once): until then it may
	// still answer for the slot, as it would in production.
	var v string
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if v, err = client.Get(ctx, "lock:0").Result(); err == nil && v == "first" {
			break
		}
	}
	if err != nil || v != "first" {
		t.Errorf("a cluster client reads lock:0 = %q (%v), want the lock from before the cut", v, err)
	}
	if err := f.Heal(ctx, target); err != nil {
		t.Fatal(err)
	}
	after := owner(t, ctx, c, "lock:0")
	if after.Master != promoted || len(after.Replicas) != 1 || after.Replicas[0] != sh.Master {
		t.Errorf("after heal %s is master with replicas %v, want %s with replica %s",
			after.Master.Name, after.Replicas, promoted.Name, sh.Master.Name)
	}
	if v, _ := c.Control(sh.Master).Get(ctx, "lock:0").Result(); v != "first" {
		t.Errorf("the old master, now a replica, still has lock:0 = %q", v)
	}
	noToxics(t, netw)
}

// slotMigrationCase: the lock moves with its token and TTL, ASK reaches
// it while the slot moves, and after heal the target serves the slot.
func slotMigrationCase(t *testing.T, ctx context.Context, c *cluster.RedisCluster, client redis.UniversalClient, target *nemesis.Target) {
	clean(t, ctx, c)
	if err := client.Set(ctx, "lock:1", "tok", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	src := owner(t, ctx, c, "lock:1").Master
	f := fault(t, "slot-migration")
	m := newBegan()
	if err := f.Start(ctx, target, rand.New(rand.NewSource(1)), m); err != nil {
		t.Fatalf("start: %v (%s)", err, m)
	}
	t.Log(m)
	if n, _ := c.Control(src).Exists(ctx, "lock:1").Result(); n != 0 {
		t.Fatalf("lock:1 is still on %s", src.Name)
	}
	var dst *cluster.Node
	var ttl time.Duration
	shards, err := c.Shards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range shards {
		if d, err := asking(ctx, c.Control(sh.Master), "PTTL", "lock:1").Int64(); err == nil && d > 0 {
			dst, ttl = sh.Master, time.Duration(d)*time.Millisecond
		}
	}
	if dst == nil || ttl > 30*time.Second {
		t.Fatalf("the migrated lock is on %v with PTTL %v, want a master with its remaining lease", dst, ttl)
	}
	// While the slot moves: the lock is still held, and a new key of
	// the slot is created on the target (through ASK).
	if ok, err := client.SetNX(ctx, "lock:1", "thief", 30*time.Second).Result(); err != nil || ok {
		t.Errorf("SET NX on the migrating lock: %v, %v; want not acquired", ok, err)
	}
	if ok, err := client.SetNX(ctx, "{lock:1}:next", "x", 30*time.Second).Result(); err != nil || !ok {
		t.Errorf("SET NX of a new key in the migrating slot: %v, %v", ok, err)
	}
	if n, _ := asking(ctx, c.Control(dst), "EXISTS", "{lock:1}:next").Int(); n != 1 {
		t.Error("a new key of the migrating slot was not created on the target")
	}
	if err := f.Heal(ctx, target); err != nil {
		t.Fatal(err)
	}
	if v, err := client.Get(ctx, "lock:1").Result(); err != nil || v != "tok" {
		t.Errorf("after heal lock:1 = %q (%v), want tok", v, err)
	}
	slot, _ := c.Control(dst).ClusterKeySlot(ctx, "lock:1").Result()
	shards, _ = c.Shards(ctx)
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if int(slot) >= r[0] && int(slot) <= r[1] && sh.Master != dst {
				t.Errorf("slot %d is served by %s after heal, want %s", slot, sh.Master.Name, dst.Name)
			}
		}
	}
	del := redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)
	if n, err := del.Run(ctx, client, []string{"lock:1"}, "tok").Int(); err != nil || n != 1 {
		t.Errorf("compare-and-delete after the move: %d, %v", n, err)
	}
}

// asking sends one command to a node that is importing its slot (ASKING
// first, on the same connection), as a client redirected with ASK does.
func asking(ctx context.Context, c *redis.Client, args ...any) *redis.Cmd {
	var cmd *redis.Cmd
	_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "ASKING")
		cmd = p.Do(ctx, args...)
		return nil
	})
	return cmd
}

func noToxics(t *testing.T, netw *cluster.Network) {
	t.Helper()
	for _, p := range netw.Paths("", "") {
		if ts, err := p.Proxy.Toxics(); err != nil || len(ts) > 0 {
			t.Errorf("proxy %s -> %s still has toxics %v (%v)", p.From, p.To, ts, err)
		}
	}
}
