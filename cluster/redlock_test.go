package cluster_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/redis/go-redis/v9"
)

// TestStartRedlock: the redlock topology is N independent masters (five
// unless told otherwise): a key written to one is on no other, each client
// gets one connection per master that honours context deadlines, and Close
// leaves no process behind.
func TestStartRedlock(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	for _, tc := range []struct{ nodes, want int }{{0, cluster.DefaultRedlockNodes}, {3, 3}} {
		topo, err := cluster.StartTopology(ctx, "redlock", cluster.TopologyOptions{Nodes: tc.nodes})
		if err != nil {
			t.Fatal(err)
		}
		closed := false
		t.Cleanup(func() {
			if !closed {
				topo.Close()
			}
		})
		if topo.Name() != "redlock" {
			t.Errorf("name %q", topo.Name())
		}
		nodes := topo.Nodes()
		if len(nodes) != tc.want {
			t.Fatalf("--nodes %d: %d masters, want %d", tc.nodes, len(nodes), tc.want)
		}
		var d net.Dialer
		conns, err := topo.Connect(d.DialContext, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(conns) != tc.want {
			t.Errorf("%d connections, want one per master (%d)", len(conns), tc.want)
		}
		for _, c := range conns {
			if o := c.(*redis.Client).Options(); !o.ContextTimeoutEnabled {
				t.Errorf("connection to %s ignores context deadlines", o.Addr)
			}
		}
		if err := conns[0].Set(ctx, "k", "v", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		for i, c := range conns[1:] {
			if err := c.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
				t.Errorf("master %d sees the key written to master 0 (%v): not independent", i+1, err)
			}
		}
		for _, c := range conns {
			c.Close()
		}
		var pids []int
		for _, n := range nodes {
			pids = append(pids, n.Pid())
		}
		topo.Close()
		closed = true
		for _, pid := range pids {
			if err := syscall.Kill(pid, 0); err == nil {
				t.Errorf("redis-server %d outlived Close", pid)
			}
		}
	}
}
