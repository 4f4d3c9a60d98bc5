// Tests of the Redlock faults on real independent masters: the restarts
// lose or keep the acknowledged locks as each variant should, the quorum
// partitions cut what they say, and the clock jumps expire the keys.

package nemesis

import (
	"context"
	"errors"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/clustertest"
)

// startFaultTopology starts a topology for a fault test, after letting faults
// prepare its servers, and stops it at the end of the test.
func startFaultTopology(t *testing.T, name string, nodes int, faults ...Fault) cluster.Topology {
	t.Helper()
	var o cluster.Options
	if err := Prepare(faults, &o); err != nil {
		t.Fatal(err)
	}
	topo, err := cluster.StartTopology(context.Background(), name, cluster.TopologyOptions{Local: o, Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { topo.Close() })
	return topo
}

func directTo(t *testing.T, n *cluster.Node) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// namedNode finds the node a fault's description names first.
func namedNode(t *testing.T, topo cluster.Topology, what string) *cluster.Node {
	t.Helper()
	for _, n := range topo.Nodes() {
		if strings.HasPrefix(what, n.Name+" ") {
			return n
		}
	}
	t.Fatalf("no node named in %q", what)
	return nil
}

// TestRestartFaults: restart-empty brings a master back without the locks it
// held; restart-fsync brings it back with them; restart-delayed brings it
// back empty but only once the TTL has passed. The other masters keep theirs.
func TestRestartFaults(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	for _, tc := range []struct {
		name     string
		new      func(Options) Fault
		keeps    bool
		downMin  time.Duration
		describe string
	}{
		{"restart-empty", newRestartEmpty, false, 0, "restarted empty at once"},
		{"restart-delayed", newRestartDelayed, false, ttl, "restarted empty"},
		{"restart-fsync", newRestartFsync, true, 0, "from its AOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.new(Options{})
			topo := startFaultTopology(t, "redlock", 3, f)
			target := &Target{Topology: topo, TTL: ttl}
			if err := f.Available(target); err != nil {
				t.Fatal(err)
			}
			for _, n := range topo.Nodes() {
				if err := directTo(t, n).Set(ctx, "lock", "mine", time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			m := &recordedMarks{}
			err := f.Start(ctx, target, rand.New(rand.NewSource(1)), m)
			what := m.String()
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if !strings.Contains(what, tc.describe) {
				t.Errorf("description %q, want it to say %q", what, tc.describe)
			}
			if took < tc.downMin {
				t.Errorf("back after %v, want no sooner than the TTL %v", took, tc.downMin)
			}
			if err := f.Heal(ctx, target); err != nil {
				t.Fatal(err)
			}
			hit := namedNode(t, topo, what)
			for _, n := range topo.Nodes() {
				v, err := directTo(t, n).Get(ctx, "lock").Result()
				if err != nil && !errors.Is(err, redis.Nil) {
					t.Fatalf("%s: %v", n.Name, err)
				}
				want := "mine"
				if n == hit && !tc.keeps {
					want = ""
				}
				if v != want {
					t.Errorf("%s holds %q after %s hit %s, want %q", n.Name, v, tc.name, hit.Name, want)
				}
			}
		})
	}
}

// TestRestartVictimsTogether: the masters restart-empty kills for one
// lease are all down at once before any comes back; then every one is back
// empty, marked back in the order they were killed, and none is left
// counted down; the masters it spared keep their keys.
func TestRestartVictimsTogether(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	f := newRestartEmpty(Options{}).(*restartNode)
	topo := startFaultTopology(t, "redlock", 5, f)
	nodes := topo.Nodes()
	for _, n := range nodes {
		if err := directTo(t, n).Set(ctx, "lock", "mine", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	victims := []*cluster.Node{nodes[3], nodes[0], nodes[2]}
	for _, n := range victims {
		if err := f.kill(n); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range victims {
		if err := directTo(t, n).Ping(ctx).Err(); err == nil {
			t.Errorf("%s answers after its kill, want all victims down together", n.Name)
		}
	}
	m := &recordedMarks{}
	if err := f.restartDown(ctx, m, "restarted empty at once"); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range victims {
		want = append(want, n.Name+" restarted empty at once")
	}
	if got := strings.Join(m.marks, "; "); got != strings.Join(want, "; ") {
		t.Errorf("marks %q, want %q", got, strings.Join(want, "; "))
	}
	if len(f.down) != 0 {
		t.Errorf("%d nodes still counted down after every restart succeeded", len(f.down))
	}
	for i, n := range nodes {
		v, err := directTo(t, n).Get(ctx, "lock").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("%s: %v", n.Name, err)
		}
		want := "mine"
		if i == 0 || i == 2 || i == 3 {
			want = ""
		}
		if v != want {
			t.Errorf("%s holds %q, want %q", n.Name, v, want)
		}
	}
}

// TestRedlockFaultsRefuseOneNode: the faults about a minority or a majority
// of masters say why they cannot run on one node.
func TestRedlockFaultsRefuseOneNode(t *testing.T) {
	clustertest.Need(t)
	topo := startFaultTopology(t, "single", 0)
	for _, name := range []string{"restart-empty", "restart-delayed", "restart-fsync", "partition-minority",
		"partition-majority", "clock-jump-partition"} {
		fs, err := newFaults(name, Options{})
		if err != nil {
			t.Fatal(err)
		}
		err = fs[0].Available(&Target{Topology: topo, Network: &cluster.Network{}, Clients: countedClients(2), TTL: time.Second})
		if err == nil || !strings.Contains(err.Error(), "--topology redlock") {
			t.Errorf("%s on one node: %v, want a refusal naming --topology redlock", name, err)
		}
	}
}

type countedClients int

func (c countedClients) Count() int  { return int(c) }
func (countedClients) Gate(int) Gate { return nil }

// TestQuorumPartition: partition-minority cuts the most masters a majority
// can lose (2 of 5), partition-majority the fewest that leave no majority (3
// of 5), from one client or from all, and heal removes every toxic.
func TestQuorumPartition(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	netw := clustertest.Network(t)
	topo := startFaultTopology(t, "redlock", 5)
	const clients = 4
	for c := 0; c < clients; c++ {
		for _, n := range topo.Nodes() {
			if _, err := netw.Route(ClientName(c), n.Addr()); err != nil {
				t.Fatal(err)
			}
		}
	}
	target := &Target{Topology: topo, Network: netw, Clients: countedClients(clients), TTL: time.Second}
	for _, tc := range []struct {
		name  string
		scope string
		paths int
	}{
		{"partition-minority", "one", 2},
		{"partition-minority", "all", 2 * clients},
		{"partition-majority", "one", 3},
		{"partition-majority", "all", 3 * clients},
	} {
		fs, err := newFaults(tc.name, Options{"partition-clients": tc.scope})
		if err != nil {
			t.Fatal(err)
		}
		f := fs[0].(*quorumPartition)
		if err := f.Available(target); err != nil {
			t.Fatal(err)
		}
		m := &recordedMarks{}
		err = f.Start(ctx, target, rand.New(rand.NewSource(7)), m)
		what := m.String()
		if err != nil {
			t.Fatal(err)
		}
		if got := len(f.applied) / 2; got != tc.paths { // both directions
			t.Errorf("%s (%s): %d paths cut (%s), want %d", tc.name, tc.scope, got, what, tc.paths)
		}
		if err := f.Heal(ctx, target); err != nil {
			t.Fatal(err)
		}
		for _, p := range netw.Paths("", "") {
			toxics, err := p.Proxy.Toxics()
			if err != nil {
				t.Fatal(err)
			}
			if len(toxics) > 0 {
				t.Errorf("%s (%s): %s->%s keeps %d toxics after heal", tc.name, tc.scope, p.From, p.To, len(toxics))
			}
		}
	}
	bad, _ := newFaults("partition-minority", Options{"partition-clients": "some"})
	if err := bad[0].Available(target); err == nil {
		t.Error("partition clients \"some\" accepted")
	}
}

func needFaketime(t *testing.T) {
	t.Helper()
	clustertest.Need(t)
	if _, err := cluster.FindLibfaketime(); err != nil {
		t.Skip(err)
	}
}

// TestClockJump: a node started under libfaketime jumps forward by more than
// the TTL: a key with most of its TTL left is gone at once, and each jump
// adds to the last. Without Prepare the fault refuses to run.
func TestClockJump(t *testing.T) {
	needFaketime(t)
	ctx := context.Background()
	unprepared := newClockJump(Options{})
	plain := startFaultTopology(t, "single", 0)
	if err := unprepared.Available(&Target{Topology: plain}); err == nil {
		t.Error("clock-jump available on servers not started under libfaketime")
	}

	f := newClockJump(Options{})
	topo := startFaultTopology(t, "single", 0, f)
	ttl := 500 * time.Millisecond
	target := &Target{Topology: topo, TTL: ttl}
	if err := f.Available(target); err != nil {
		t.Fatal(err)
	}
	c := directTo(t, topo.Nodes()[0])
	if err := c.Set(ctx, "lock", "mine", 10*ttl).Err(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	for i := 1; i <= 2; i++ {
		m := &recordedMarks{}
		err := f.Start(ctx, target, rng, m)
		what := m.String()
		if err != nil {
			t.Fatal(err)
		}
		now, err := c.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		want := time.Duration(i) * 2 * ttl
		if ahead := time.Until(now); ahead < want-100*time.Millisecond || ahead > want+time.Second {
			t.Errorf("jump %d (%s): the node's clock is %v ahead, want about %v", i, what, ahead, want)
		}
		if i == 1 {
			// A 5 s TTL, 1 s of jump: still there; the next jump kills it.
			if err := c.Get(ctx, "lock").Err(); err != nil {
				t.Fatalf("after a jump shorter than its TTL the key is gone: %v", err)
			}
			if err := c.Set(ctx, "lock", "mine", ttl).Err(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := c.Get(ctx, "lock").Err(); !errors.Is(err, redis.Nil) {
			t.Errorf("after a jump of 2 x TTL the key is still there (%v)", err)
		}
	}
	if err := f.Heal(ctx, target); err != nil {
		t.Fatal(err)
	}
}

// TestClockJumpPartition: one client is cut from a minority that leaves out
// the jumping master, whose clock keeps jumping until heal, then stops.
func TestClockJumpPartition(t *testing.T) {
	needFaketime(t)
	ctx := context.Background()
	netw := clustertest.Network(t)
	f := newClockJumpPartition(Options{}).(*clockJumpPartition)
	topo := startFaultTopology(t, "redlock", 3, f)
	for c := 0; c < 2; c++ {
		for _, n := range topo.Nodes() {
			if _, err := netw.Route(ClientName(c), n.Addr()); err != nil {
				t.Fatal(err)
			}
		}
	}
	ttl := 200 * time.Millisecond
	target := &Target{Topology: topo, Network: netw, Clients: countedClients(2), TTL: ttl}
	if err := f.Available(target); err != nil {
		t.Fatal(err)
	}
	m := &recordedMarks{}
	err := f.Start(ctx, target, rand.New(rand.NewSource(3)), m)
	what := m.String()
	if err != nil {
		t.Fatal(err)
	}
	if got := len(f.cut.applied) / 2; got != 1 {
		t.Errorf("%d paths cut (%s), want one client from one master", got, what)
	}
	jumper := namedNode(t, topo, strings.SplitN(what, "; ", 2)[1])
	if strings.Contains(strings.SplitN(what, ";", 2)[0], jumper.Name) {
		t.Errorf("%s: the jumping master is among those cut off", what)
	}
	time.Sleep(3 * ttl)
	if err := f.Heal(ctx, target); err != nil {
		t.Fatal(err)
	}
	healed, err := readOffset(context.Background(), jumper)
	if err != nil {
		t.Fatal(err)
	}
	if min := 4 * 2 * ttl; healed < min {
		t.Errorf("%s ahead by %v after 3 TTLs of jumps every TTL/4, want at least %v", jumper.Name, healed, min)
	}
	time.Sleep(ttl)
	if later, _ := readOffset(context.Background(), jumper); later != healed {
		t.Errorf("the clock went on jumping after heal: %v, then %v", healed, later)
	}
}
