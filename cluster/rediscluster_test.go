package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/clustertest"
)

// startRedisCluster brings the cluster topology up with its network and
// stops both at cleanup, then checks that none of its servers is left.
func startRedisCluster(t *testing.T) (*cluster.RedisCluster, *cluster.Network) {
	t.Helper()
	clustertest.Need(t) // redis-server; pgrep checks what is left
	topo, netw := startChecked(t, "cluster", func(topo cluster.Topology) []int {
		var pids []int
		for _, n := range topo.Nodes() {
			pids = append(pids, n.Pid())
		}
		return pids
	})
	return topo.(*cluster.RedisCluster), netw
}

// TestRedisCluster starts three masters with a replica each and checks what
// the lock runs rely on: the slots are all served, a cluster-aware client
// going through its own proxies reaches every master, lock:0..lock:2 land on
// three different masters, and cutting a master's replication path keeps a
// write off its replica until the cut heals.
func TestRedisCluster(t *testing.T) {
	c, netw := startRedisCluster(t)
	shards := checkShards(t, c)
	checkClusterClient(t, c, netw, shards)
	checkShardCut(t, c, shards[0])
}

// checkShards checks that c has three masters with a replica each serving
// every slot, and returns them.
func checkShards(t *testing.T, c *cluster.RedisCluster) []cluster.Shard {
	t.Helper()
	shards, err := c.Shards(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	served := 0
	for _, sh := range shards {
		if len(sh.Replicas) != 1 {
			t.Errorf("master %s has replicas %v, want one", sh.Master.Name, sh.Replicas)
		}
		for _, r := range sh.Slots {
			served += r[1] - r[0] + 1
		}
	}
	if len(shards) != 3 || served != 16384 {
		t.Fatalf("%d masters serving %d slots, want 3 serving 16384", len(shards), served)
	}
	return shards
}

// checkClusterClient checks that a client of c is cluster-aware, reaches
// every master through its own proxy, and finds lock:0..lock:2 on three
// different masters.
func checkClusterClient(t *testing.T, c *cluster.RedisCluster, netw *cluster.Network, shards []cluster.Shard) {
	t.Helper()
	ctx := context.Background()
	nodes, err := c.Connect(netw.Dialer("c0"), nil)
	if err != nil {
		t.Fatal(err)
	}
	client := nodes[0]
	defer client.Close()
	if _, ok := client.(*redis.ClusterClient); !ok {
		t.Fatalf("Connect gave %T, want a cluster client", client)
	}
	owner := map[string]bool{}
	for i := 0; i < 3; i++ {
		key := fmt.Sprintf("lock:%d", i)
		if err := client.Set(ctx, key, "t", time.Minute).Err(); err != nil {
			t.Fatalf("SET %s through the proxies: %v", key, err)
		}
		for _, sh := range shards {
			if n, _ := c.Control(sh.Master).Exists(ctx, key).Result(); n == 1 {
				owner[sh.Master.Name] = true
			}
		}
	}
	if len(owner) != 3 {
		t.Errorf("lock:0..lock:2 are on masters %v, want three different ones", owner)
	}
	for _, sh := range shards {
		if len(netw.Paths("c0", sh.Master.Addr())) != 1 {
			t.Errorf("client c0 reached %s without its proxy", sh.Master.Name)
		}
	}
}

// checkShardCut checks that cutting the replication path of sh's master
// keeps a write off its replica (and its acknowledgement away) until the
// cut heals.
func checkShardCut(t *testing.T, c *cluster.RedisCluster, sh cluster.Shard) {
	t.Helper()
	ctx := context.Background()
	m, r := sh.Master, sh.Replicas[0]
	var cut []*cluster.Path
	for _, p := range c.ReplicationPaths(m) {
		if _, err := p.Proxy.AddToxic("cut", "timeout", "downstream", 1, toxiclient.Attributes{"timeout": 0}); err != nil {
			t.Fatal(err)
		}
		cut = append(cut, p)
	}
	key := ownedKey(t, ctx, c, m)
	if err := c.Control(m).Set(ctx, key, "during-cut", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Control(m).Wait(ctx, 1, 300*time.Millisecond).Result(); n != 0 {
		t.Errorf("%d replicas acknowledged a write while replication was cut", n)
	}
	if v, _ := c.Control(r).Get(ctx, key).Result(); v == "during-cut" {
		t.Error("the replica got a write made while replication was cut")
	}
	for _, p := range cut {
		if err := p.Proxy.RemoveToxic("cut"); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Settle(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Control(m).Wait(ctx, 1, 5*time.Second).Result(); n != 1 {
		t.Errorf("%d replicas acknowledged after the cut healed, want 1", n)
	}
	if v, _ := c.Control(r).Get(ctx, key).Result(); v != "during-cut" {
		t.Errorf("the replica has %q after the cut healed, want the write", v)
	}
}

// ownedKey returns a key whose slot m serves.
func ownedKey(t *testing.T, ctx context.Context, c *cluster.RedisCluster, m *cluster.Node) string {
	t.Helper()
	for i := 0; i < 100; i++ {
		k := fmt.Sprintf("lock:%d", i)
		slot, err := c.Control(m).ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		shards, err := c.Shards(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if sh.Master == m && int(slot) >= r[0] && int(slot) <= r[1] {
					return k
				}
			}
		}
	}
	t.Fatalf("no key of lock:0..99 is served by %s", m.Name)
	return ""
}
