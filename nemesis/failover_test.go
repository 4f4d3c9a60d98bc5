// Tests of the Sentinel faults on a real Sentinel topology: they refuse
// other topologies, the lossy failover promotes a replica without the key
// written during the cut, replication-delay holds writes back, and every
// heal leaves the topology healthy.

package nemesis_test

import (
	"context"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/testredis"
	"github.com/locktorture/locktorture/nemesis"
)

var sentinelFaults = []string{"failover", "failover-lossy", "replication-delay", "sentinel-failover"}

// plainTopology is any topology without Sentinel.
type plainTopology struct{ cluster.Topology }

func TestFailoverFaultsNeedSentinel(t *testing.T) {
	for _, name := range sentinelFaults {
		e, err := nemesis.Builtin().Get(name)
		if err != nil {
			t.Fatal(err)
		}
		err = e.New(nemesis.Options{}).Available(&nemesis.Target{Topology: plainTopology{}, Network: &cluster.Network{}})
		if err == nil || !strings.Contains(err.Error(), "Sentinel") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s on a topology without Sentinel: %v, want a one-line refusal naming Sentinel", name, err)
		}
	}
}

func fault(t *testing.T, name string) nemesis.Fault {
	t.Helper()
	e, err := nemesis.Builtin().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return e.New(nemesis.Options{})
}

func role(t *testing.T, n *cluster.Node) string {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
	defer c.Close()
	r, err := c.Do(context.Background(), "ROLE").Slice()
	if err != nil || len(r) == 0 {
		t.Fatalf("ROLE of %s: %v", n.Name, err)
	}
	return r[0].(string)
}

// healthy checks what every heal must leave: one master named by the
// Sentinels, the other nodes its replicas, and no toxic on any proxy.
func healthy(t *testing.T, s *cluster.SentinelTopology, netw *cluster.Network) *cluster.Node {
	t.Helper()
	m, err := s.Master(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range s.Nodes() {
		want := "slave"
		if n == m {
			want = "master"
		}
		if got := role(t, n); got != want {
			t.Errorf("%s is %s, want %s", n.Name, got, want)
		}
	}
	for _, p := range netw.Paths("", "") {
		if ts, err := p.Proxy.Toxics(); err != nil || len(ts) > 0 {
			t.Errorf("proxy %s -> %s still has toxics %v (%v)", p.From, p.To, ts, err)
		}
	}
	return m
}

// TestFailoverFaults runs each Sentinel fault once on a real topology: the
// lossy failover promotes a replica that lacks a key written during the
// cut, the delay keeps a write off the replicas for a while, the manual
// failover moves the master, and every heal leaves the topology healthy.
func TestFailoverFaults(t *testing.T) {
	ctx := context.Background()
	topo, netw := testredis.Topology(t, "sentinel", cluster.TopologyOptions{})
	s := topo.(*cluster.SentinelTopology)
	target := &nemesis.Target{Topology: s, Network: netw, TTL: 400 * time.Millisecond}
	rng := rand.New(rand.NewSource(1))

	t.Run("failover-lossy", func(t *testing.T) {
		f := fault(t, "failover-lossy")
		old := healthy(t, s, netw)
		// A TTL of 4s gives a 2s cut before the master fails.
		lossy := &nemesis.Target{Topology: s, Network: netw, TTL: 4 * time.Second}
		m := &marks{}
		err := f.Start(ctx, lossy, rng, m)
		what := m.String()
		if err != nil {
			t.Fatal(err)
		}
		t.Log(what)
		c := redis.NewClient(&redis.Options{Addr: old.Addr(), MaxRetries: -1})
		defer c.Close()
		if err := c.Set(ctx, "written-during-cut", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		nm, err := s.WaitSwitch(ctx, old, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		nc := redis.NewClient(&redis.Options{Addr: nm.Addr(), MaxRetries: -1})
		defer nc.Close()
		if n, _ := nc.Exists(ctx, "written-during-cut").Result(); n != 0 {
			t.Error("the promoted replica has the key written while replication was cut")
		}
		if err := f.Heal(ctx, lossy); err != nil {
			t.Fatal(err)
		}
		if m := healthy(t, s, netw); m == old {
			t.Errorf("%s is master again", old.Name)
		}
	})

	t.Run("replication-delay", func(t *testing.T) {
		f := fault(t, "replication-delay")
		m := healthy(t, s, netw)
		if err := f.Start(ctx, target, rng, &marks{}); err != nil {
			t.Fatal(err)
		}
		c := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
		defer c.Close()
		if err := c.Set(ctx, "delayed", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if n, _ := c.Wait(ctx, 1, 100*time.Millisecond).Result(); n != 0 {
			t.Errorf("%d replicas acknowledged within 100ms under a %v delay", n, target.TTL)
		}
		if n, _ := c.Wait(ctx, 2, 5*time.Second).Result(); n != 2 {
			t.Errorf("%d replicas acknowledged eventually, want 2", n)
		}
		if err := f.Heal(ctx, target); err != nil {
			t.Fatal(err)
		}
		healthy(t, s, netw)
	})

	t.Run("sentinel-failover", func(t *testing.T) {
		f := fault(t, "sentinel-failover")
		old := healthy(t, s, netw)
		if err := f.Start(ctx, target, rng, &marks{}); err != nil {
			t.Fatal(err)
		}
		if err := f.Heal(ctx, target); err != nil {
			t.Fatal(err)
		}
		if m := healthy(t, s, netw); m == old {
			t.Errorf("%s is still master after SENTINEL FAILOVER", old.Name)
		}
	})
}

// marks keeps what a fault marked, for tests that start faults by hand.
type marks struct{ got []string }

func (m *marks) Began(target string) { m.got = append(m.got, target) }
func (m *marks) Step(what string)    { m.got = append(m.got, what) }
func (m *marks) String() string      { return strings.Join(m.got, "; ") }
