// A test of the forced failover (CLUSTER FAILOVER TAKEOVER) as the cluster
// faults send it.

package cluster_test

import (
	"context"
	"testing"
	"time"
)

// TestForceFailoverInARow: three forced failovers of one shard in a row,
// back and forth, each promotion holding. A Redis Cluster master votes for
// a replica of a given master at most once in twice the node timeout, so
// with CLUSTER FAILOVER FORCE the third went unanswered: its replica said
// role:master for a moment, then followed the old master again. A takeover
// asks for no votes.
func TestForceFailoverInARow(t *testing.T) {
	ctx := context.Background()
	c, _ := startRedisCluster(t)
	sh := checkShards(t, c)[0]
	m, r := sh.Master, sh.Replicas[0]
	for i, promote := range []struct{ name, over string }{{r.Name, m.Name}, {m.Name, r.Name}, {r.Name, m.Name}} {
		n := r
		if promote.name == m.Name {
			n = m
		}
		start := time.Now()
		if err := c.ForceFailover(ctx, n, 20*time.Second); err != nil {
			t.Fatalf("failover %d, %s over %s: %v", i+1, promote.name, promote.over, err)
		}
		t.Logf("failover %d, %s over %s: %v", i+1, promote.name, promote.over, time.Since(start).Round(time.Millisecond))
		if err := c.Settle(ctx, 30*time.Second); err != nil {
			t.Fatalf("after failover %d: %v", i+1, err)
		}
		shards, err := c.Shards(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range shards {
			if s.Slots[0] == sh.Slots[0] && s.Master != n {
				t.Fatalf("after failover %d %s is the master, want %s", i+1, s.Master.Name, n.Name)
			}
		}
	}
}
