// Tests of the Sentinel faults on a real Sentinel topology: they refuse
// other topologies, the lossy failover promotes a replica without the key
// written during the cut, replication-delay holds writes back, and every
// heal leaves the topology healthy.

package nemesis_test

import (
	"context"
	"errors"
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
	topo, netw := clustertest.Topology(t, "sentinel", cluster.TopologyOptions{})
	s := topo.(*cluster.SentinelTopology)
	r := &sentinelRig{s: s, netw: netw, rng: rand.New(rand.NewSource(1)),
		target: &nemesis.Target{Topology: s, Network: netw, TTL: 400 * time.Millisecond}}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, r *sentinelRig)
	}{
		{"failover-lossy", testFailoverLossy},
		{"failover-lossy aimed", testFailoverLossyAimed},
		{"replication-delay", testReplicationDelay},
		{"sentinel-failover", testSentinelFailover},
		{"sentinel-failover aborted", testSentinelFailoverAborted},
		{"failover-lossy aimed aborted", testFailoverLossyAimedAborted},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, r) })
	}
}

// sentinelRig is the topology TestFailoverFaults's cases run on, one after
// the other, with the target and the seeded source they share.
type sentinelRig struct {
	s      *cluster.SentinelTopology
	netw   *cluster.Network
	target *nemesis.Target // a TTL of 400ms
	rng    *rand.Rand
}

// aimed is the rig's target with a TTL of 4s and a Watch the test steps
// through, for a fault that aims at the protocol.
func (r *sentinelRig) aimed() (*waits, *nemesis.Target) {
	p := newWaits()
	return p, &nemesis.Target{Topology: r.s, Network: r.netw, TTL: 4 * time.Second, Protocol: p}
}

// start builds the named fault and starts it on the rig's target once the
// topology is healthy; it returns the fault and the master it started on.
func (r *sentinelRig) start(t *testing.T, name string) (nemesis.Fault, *cluster.Node) {
	t.Helper()
	f := fault(t, name)
	m := healthy(t, r.s, r.netw)
	if err := f.Start(context.Background(), r.target, r.rng, &marks{}); err != nil {
		t.Fatal(err)
	}
	return f, m
}

// heal heals f on the rig's target and returns the master of the healthy
// topology it must leave.
func (r *sentinelRig) heal(t *testing.T, f nemesis.Fault) *cluster.Node {
	t.Helper()
	if err := f.Heal(context.Background(), r.target); err != nil {
		t.Fatal(err)
	}
	return healthy(t, r.s, r.netw)
}

// client is a client of node n alone, closed when the test ends.
func client(t *testing.T, n *cluster.Node) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// namedBy is the address the Sentinel at addr names for the master.
func namedBy(t *testing.T, addr string) string {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	defer c.Close()
	a, err := c.Do(context.Background(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", cluster.SentinelMaster).StringSlice()
	if err != nil || len(a) != 2 {
		t.Fatalf("sentinel at %s names %v (%v)", addr, a, err)
	}
	return a[0] + ":" + a[1]
}

// failed waits until n, killed or paused, no longer answers.
func failed(t *testing.T, n *cluster.Node, within time.Duration) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, DialTimeout: 100 * time.Millisecond,
		ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond})
	defer c.Close()
	for deadline := time.Now().Add(within); c.Ping(context.Background()).Err() == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("%s still answers after %v", n.Name, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// promotedWithout waits for Sentinel to promote a replica in old's place
// and reports whether the new master lacks key. Sentinel must have been
// given its cause: the master failed, or a failover asked for.
func promotedWithout(t *testing.T, s *cluster.SentinelTopology, old *cluster.Node, key string) bool {
	t.Helper()
	ctx := context.Background()
	nm, err := s.WaitSwitch(ctx, old, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := client(t, nm).Exists(ctx, key).Result()
	return n == 0
}

// testFailoverLossy: a key written to the master during the cut is not on
// the replica promoted in its place.
func testFailoverLossy(t *testing.T, r *sentinelRig) {
	ctx := context.Background()
	f := fault(t, "failover-lossy")
	old := healthy(t, r.s, r.netw)
	// A TTL of 4s gives a 2s cut before the master fails.
	lossy := &nemesis.Target{Topology: r.s, Network: r.netw, TTL: 4 * time.Second}
	m := &marks{}
	err := f.Start(ctx, lossy, r.rng, m)
	what := m.String()
	if err != nil {
		t.Fatal(err)
	}
	t.Log(what)
	if err := client(t, old).Set(ctx, "written-during-cut", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	failed(t, old, 5*time.Second)
	if !promotedWithout(t, r.s, old, "written-during-cut") {
		t.Error("the promoted replica has the key written while replication was cut")
	}
	if err := f.Heal(ctx, lossy); err != nil {
		t.Fatal(err)
	}
	if m := healthy(t, r.s, r.netw); m == old {
		t.Errorf("%s is master again", old.Name)
	}
}

// testFailoverLossyAimed: aimed, the lossy failover cuts at an attempt on
// a key no replica has (undoing a cut made at one every replica has), and
// fails over once that attempt's lock is granted on the master only.
func testFailoverLossyAimed(t *testing.T, r *sentinelRig) {
	ctx := context.Background()
	f := fault(t, "failover-lossy")
	old := healthy(t, r.s, r.netw)
	c := client(t, old)
	staleCopy(t, c)
	p, aimed := r.aimed()
	m := &marks{}
	done := make(chan error, 1)
	before := namedBy(t, r.s.SentinelAddrs()[0])
	go func() { done <- f.Start(ctx, aimed, r.rng, m) }()
	stepToLossyGrant(t, p, c, r.s.ReplicationPaths(old))
	// The switch is held back for a grant from a second after the
	// failover on: past the moment Sentinel would have switched by
	// itself, the first Sentinel still names the old master.
	p.await(t, nemesis.Acquired)
	time.Sleep(300 * time.Millisecond)
	if got := namedBy(t, r.s.SentinelAddrs()[0]); got != before {
		t.Fatalf("sentinel 1 names %s while the switch is held, want %s", got, before)
	}
	if err := c.Set(ctx, "lock:c", "L2", 4*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	p.emit(t, nemesis.ProtocolEvent{Kind: nemesis.Acquired, Client: 1, Key: "lock:c", Lease: "L2",
		Hold: time.Second, Expires: time.Now().Add(4 * time.Second)})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"c0's lock on it only", "the promotion announced right after " + old.Name + " granted c1's lock"} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("marks %q, want %q", m, want)
		}
	}
	if !promotedWithout(t, r.s, old, "lock:b") {
		t.Error("the promoted replica has the lock written during the cut")
	}
	if err := f.Heal(ctx, aimed); err != nil {
		t.Fatal(err)
	}
	healthy(t, r.s, r.netw)
}

// stepToLossyGrant plays the client side of the aimed lossy failover
// through p: an attempt on lock:a, which every replica has (the cut made
// there must be undone), then one on lock:b, written through c to the
// master only and granted. paths are the master's replication paths.
func stepToLossyGrant(t *testing.T, p *waits, c *redis.Client, paths []*cluster.Path) {
	t.Helper()
	attempt := func(key string) nemesis.ProtocolEvent {
		return nemesis.ProtocolEvent{Kind: nemesis.Point, Point: "attempt", Key: key}
	}
	// The cut is looked at in the fault's act, in emit's goroutine: once
	// emit returns, the fault may already have found lock:a on a replica
	// and undone it.
	var cutAtAct bool
	p.atAct = func() { cutAtAct = cut(t, paths) }
	p.await(t, nemesis.Point)
	p.emit(t, attempt("lock:a")) // cut here: every replica still has lock:a
	p.atAct = nil
	if !cutAtAct {
		t.Fatal("no cut at the attempt")
	}
	p.await(t, nemesis.Point) // waits for another attempt: the cut is undone
	if cut(t, paths) {
		t.Fatal("the cut stayed with lock:a on the replicas")
	}
	p.emit(t, attempt("lock:b")) // no replica has lock:b: the cut stays
	if !cut(t, paths) {
		t.Fatal("no cut at the attempt on lock:b")
	}
	// The attempt's write, on the master only, and its grant.
	if err := c.Set(context.Background(), "lock:b", "L1", 4*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	p.await(t, nemesis.Acquired)
	p.emit(t, nemesis.ProtocolEvent{Kind: nemesis.Acquired, Key: "lock:b", Lease: "L1", Expires: time.Now().Add(4 * time.Second)})
}

// testReplicationDelay: under the delay a write reaches no replica within
// 100ms, and both eventually.
func testReplicationDelay(t *testing.T, r *sentinelRig) {
	ctx := context.Background()
	f, m := r.start(t, "replication-delay")
	c := client(t, m)
	if err := c.Set(ctx, "delayed", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Wait(ctx, 1, 100*time.Millisecond).Result(); n != 0 {
		t.Errorf("%d replicas acknowledged within 100ms under a %v delay", n, r.target.TTL)
	}
	if n, _ := c.Wait(ctx, 2, 5*time.Second).Result(); n != 2 {
		t.Errorf("%d replicas acknowledged eventually, want 2", n)
	}
	r.heal(t, f)
}

// testSentinelFailover: SENTINEL FAILOVER moves the master.
func testSentinelFailover(t *testing.T, r *sentinelRig) {
	f, old := r.start(t, "sentinel-failover")
	if m := r.heal(t, f); m == old {
		t.Errorf("%s is still master after SENTINEL FAILOVER", old.Name)
	}
}

// testSentinelFailoverAborted: a SENTINEL FAILOVER that Sentinel aborts
// (no replica obeys its SLAVEOF NO ONE: their ACL refuses it here) never
// switches. The heal says the fault never took effect, with Sentinel's own
// abort line, once no Sentinel is failing the master over rather than at
// the end of its wait, and the old master is still master after it.
func testSentinelFailoverAborted(t *testing.T, r *sentinelRig) {
	f := fault(t, "sentinel-failover")
	old := healthy(t, r.s, r.netw)
	obey := refuseSlaveof(t, r.s, old)
	defer obey()
	if err := f.Start(context.Background(), r.target, r.rng, &marks{}); err != nil {
		t.Fatal(err)
	}
	checkAborted(t, r, f, old, obey)
}

// testFailoverLossyAimedAborted: the aimed lossy failover whose SENTINEL
// FAILOVER is aborted gives up its wait to demote the old master as soon
// as no Sentinel is failing it over, and its heal says it never took
// effect.
func testFailoverLossyAimedAborted(t *testing.T, r *sentinelRig) {
	ctx := context.Background()
	f := fault(t, "failover-lossy")
	old := healthy(t, r.s, r.netw)
	c := client(t, old)
	staleCopy(t, c)
	obey := refuseSlaveof(t, r.s, old)
	defer obey()
	p, aimed := r.aimed()
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx, aimed, r.rng, &marks{}) }()
	stepToLossyGrant(t, p, c, r.s.ReplicationPaths(old))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkAborted(t, &sentinelRig{s: r.s, netw: r.netw, target: aimed}, f, old, obey)
	if err := c.Del(ctx, "lock:a", "lock:b").Err(); err != nil {
		t.Fatal(err)
	}
}

// staleCopy writes lock:a through c, a client of the master, and waits
// until both replicas have it: a replica promoted with it would keep the
// key taken until it expired.
func staleCopy(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	if err := c.Set(ctx, "lock:a", "stale", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Wait(ctx, 2, 5*time.Second).Result(); err != nil || n != 2 {
		t.Fatalf("replicas acknowledged %d (%v), want 2", n, err)
	}
}

// refuseSlaveof makes every node but old refuse SLAVEOF and REPLICAOF
// (their ACL), so that Sentinel can promote none of them and aborts its
// failover at its timeout; the function it returns lifts the refusal.
func refuseSlaveof(t *testing.T, s *cluster.SentinelTopology, old *cluster.Node) func() {
	t.Helper()
	acl := func(rule string) {
		for _, n := range s.Nodes() {
			if n == old {
				continue
			}
			if err := client(t, n).Do(context.Background(), "ACL", "SETUSER", "default", rule+"slaveof", rule+"replicaof").Err(); err != nil {
				t.Fatalf("ACL on %s: %v", n.Name, err)
			}
		}
	}
	acl("-")
	return func() { acl("+") }
}

// checkAborted heals f, started on old with every replica refusing to be
// promoted: the heal must say the fault never took effect, with Sentinel's
// abort line, once no Sentinel is failing old over rather than at the end
// of a wait; once the replicas obey again, old is the healthy master.
func checkAborted(t *testing.T, r *sentinelRig, f nemesis.Fault, old *cluster.Node, obey func()) {
	t.Helper()
	err := f.Heal(context.Background(), r.target)
	if !errors.Is(err, nemesis.ErrNoEffect) || !errors.Is(err, cluster.ErrNoFailover) {
		t.Fatalf("heal: %v, want the fault never took effect", err)
	}
	for _, want := range []string{"none is failing it over", "failover-abort"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("heal: %v, want it to say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "within") {
		t.Errorf("heal: %v, want no wait to its end", err)
	}
	obey()
	if m := healthy(t, r.s, r.netw); m != old {
		t.Errorf("%s is master after an aborted failover, want %s", m.Name, old.Name)
	}
}

// marks keeps what a fault marked, for tests that start faults by hand. A
// fault marks later steps from goroutines of its own (a blind lossy
// failover's kill), hence the lock.
type marks struct {
	mu  sync.Mutex
	got []string
}

func (m *marks) Began(target string) { m.add(target) }
func (m *marks) Step(what string)    { m.add(what) }

func (m *marks) add(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = append(m.got, s)
}

func (m *marks) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.got, "; ")
}

// waits is a Watch that says each time a fault begins to wait and each
// time its wait takes a step, so that a test steps in time with the fault.
type waits struct {
	*nemesis.Watch
	waiting chan nemesis.StepKind
	taken   chan struct{}
	// atAct, when set, runs right after the fault's act, in the emitting
	// goroutine, before the fault can take its next step.
	atAct func()
}

func (w *waits) Next(ctx context.Context, f nemesis.Filter) (nemesis.ProtocolEvent, error) {
	w.waiting <- f.Kind
	act := f.Act
	f.Act = func(e nemesis.ProtocolEvent) {
		if act != nil {
			act(e)
		}
		if w.atAct != nil {
			w.atAct()
		}
		w.taken <- struct{}{}
	}
	return w.Watch.Next(ctx, f)
}

// newWaits is a waits on a fresh Watch.
func newWaits() *waits {
	return &waits{Watch: nemesis.NewWatch(0), waiting: make(chan nemesis.StepKind, 8), taken: make(chan struct{}, 8)}
}

// await returns once the fault begins to wait for a step of kind k.
func (w *waits) await(t *testing.T, k nemesis.StepKind) {
	t.Helper()
	select {
	case got := <-w.waiting:
		if got != k {
			t.Fatalf("the fault waits for %s, want %s", got, k)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the fault never waited for %s", k)
	}
}

// emit reports e until the fault's wait takes it (the wait is registered
// a moment after it begins); the fault has acted on it when emit returns.
func (w *waits) emit(t *testing.T, e nemesis.ProtocolEvent) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.Emit(e)
		select {
		case <-w.taken:
			return
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fault never took %s %s", e.Kind, e.Point)
		}
	}
}

// cut reports whether a toxic is on every path.
func cut(t *testing.T, paths []*cluster.Path) bool {
	t.Helper()
	for _, p := range paths {
		ts, err := p.Proxy.Toxics()
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) == 0 {
			return false
		}
	}
	return len(paths) > 0
}
