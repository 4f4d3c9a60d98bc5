package locks_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/locks"
	"github.com/redis/go-redis/v9"
)

// masters starts n real redis-servers for the test and returns them with a
// direct client to each (the inspector's view, not a lock's).
func masters(t *testing.T, n int) (*cluster.Local, []*redis.Client) {
	t.Helper()
	clustertest.Need(t)
	l, err := cluster.StartLocal(context.Background(), n, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var direct []*redis.Client
	for _, node := range l.Nodes() {
		c := redis.NewClient(&redis.Options{Addr: node.Addr(), MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		direct = append(direct, c)
	}
	return l, direct
}

// newLock builds the named lock over conns, as one client of a run would.
func newLock(t *testing.T, name string, conns []redis.UniversalClient, ttl, wait time.Duration, hooks locks.Hooks) locks.Lock {
	t.Helper()
	e, err := locks.Builtin().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	lk, err := e.New(locks.Config{Nodes: conns, TTL: ttl, Wait: wait, Rand: rand.New(rand.NewSource(1)),
		NewToken: func() string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("%s-%p-%d", name, &n, n)
		}, Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	return lk
}

func clients(direct []*redis.Client) []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(direct))
	for i, c := range direct {
		out[i] = c
	}
	return out
}

// holders returns, per node, the value of key ("" when absent).
func holders(t *testing.T, direct []*redis.Client, key string) []string {
	t.Helper()
	out := make([]string, len(direct))
	for i, c := range direct {
		v, err := c.Get(context.Background(), key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("inspect node %d: %v", i, err)
		}
		out[i] = v
	}
	return out
}

func count(vals []string, v string) int {
	n := 0
	for _, x := range vals {
		if x == v {
			n++
		}
	}
	return n
}

// TestRedlockMajority checks the algorithm's arithmetic on three real
// masters: a majority wins, a minority does not, a node that is down or
// held by someone else is tolerated only as a minority, a lease whose
// validity is used up counts for nothing, and every attempt that did not
// win is undone on every node.
func TestRedlockMajority(t *testing.T) {
	l, direct := masters(t, 3)
	cases := []struct {
		name string
		run  func(t *testing.T, l *cluster.Local, direct []*redis.Client)
	}{
		{"all nodes free", majorityAllFree},
		{"a minority held by another client", majorityMinorityHeld},
		{"a majority held by another client", majorityMajorityHeld},
		{"validity used up", majorityValidityUsedUp},
		{"a minority down, then a majority", majorityNodesDown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range direct {
				c.Del(context.Background(), majorityKey)
			}
			tc.run(t, l, direct)
		})
	}
}

// The key and the TTL of TestRedlockMajority's cases.
const majorityTTL, majorityKey = 2 * time.Second, "lock:m"

// majorityAllFree: with all three nodes free the lease is on every node,
// a second client is refused, and the release clears them all.
func majorityAllFree(t *testing.T, l *cluster.Local, direct []*redis.Client) {
	ctx := context.Background()
	a := newLock(t, "redlock", clients(direct), majorityTTL, 0, locks.Hooks{})
	lease, err := a.Acquire(ctx, majorityKey)
	if err != nil {
		t.Fatal(err)
	}
	drift := majorityTTL/100 + 2*time.Millisecond
	if lease.Validity <= 0 || lease.Validity > majorityTTL-drift {
		t.Errorf("validity %v, want in (0, %v]", lease.Validity, majorityTTL-drift)
	}
	if got := count(holders(t, direct, majorityKey), lease.Token); got != 3 {
		t.Errorf("token on %d nodes, want 3", got)
	}
	b := newLock(t, "redlock", clients(direct), majorityTTL, 0, locks.Hooks{})
	if _, err := b.Acquire(ctx, majorityKey); !errors.Is(err, locks.ErrNotAcquired) {
		t.Errorf("second client: %v, want ErrNotAcquired", err)
	}
	if deleted, err := a.Release(ctx, lease); err != nil || !deleted {
		t.Errorf("release: deleted %v, %v", deleted, err)
	}
	if got := holders(t, direct, majorityKey); count(got, "") != 3 {
		t.Errorf("after release: %q, want nothing", got)
	}
}

// majorityMinorityHeld: with another client's key on one node a majority
// still wins, and the release leaves the other's key alone.
func majorityMinorityHeld(t *testing.T, l *cluster.Local, direct []*redis.Client) {
	ctx := context.Background()
	direct[0].Set(ctx, majorityKey, "other", majorityTTL)
	a := newLock(t, "redlock", clients(direct), majorityTTL, 0, locks.Hooks{})
	lease, err := a.Acquire(ctx, majorityKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if got := holders(t, direct, majorityKey); got[0] != "other" || got[1] != "" || got[2] != "" {
		t.Errorf("after release: %q, want only the other client's key on node 0", got)
	}
}

// majorityMajorityHeld: with another client's key on two nodes the
// acquire fails and undoes its attempt on the third.
func majorityMajorityHeld(t *testing.T, l *cluster.Local, direct []*redis.Client) {
	ctx := context.Background()
	direct[0].Set(ctx, majorityKey, "other", majorityTTL)
	direct[1].Set(ctx, majorityKey, "other", majorityTTL)
	a := newLock(t, "redlock", clients(direct), majorityTTL, 50*time.Millisecond, locks.Hooks{})
	if _, err := a.Acquire(ctx, majorityKey); !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("acquire: %v, want ErrNotAcquired", err)
	}
	if got := holders(t, direct, majorityKey); got[2] != "" {
		t.Errorf("the lost attempt left %q on node 2, want it undone", got[2])
	}
}

// majorityValidityUsedUp: under a TTL the drift alone exceeds every node
// says OK, yet the lease is refused and undone.
func majorityValidityUsedUp(t *testing.T, l *cluster.Local, direct []*redis.Client) {
	ctx := context.Background()
	// Drift alone (1% + 2 ms) exceeds a 2 ms TTL: every node says OK
	// and the lease is still worth nothing.
	a := newLock(t, "redlock", clients(direct), 2*time.Millisecond, 0, locks.Hooks{})
	if _, err := a.Acquire(ctx, majorityKey); !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("acquire: %v, want ErrNotAcquired", err)
	}
	if got := holders(t, direct, majorityKey); count(got, "") != 3 {
		t.Errorf("the refused attempt left %q, want it undone", got)
	}
}

// majorityNodesDown: one node of three down is tolerated, two are not;
// the nodes are restarted after.
func majorityNodesDown(t *testing.T, l *cluster.Local, direct []*redis.Client) {
	ctx := context.Background()
	nodes := l.Nodes()
	if err := nodes[2].Kill(); err != nil {
		t.Fatal(err)
	}
	a := newLock(t, "redlock", clients(direct), majorityTTL, 0, locks.Hooks{})
	lease, err := a.Acquire(ctx, majorityKey)
	if err != nil {
		t.Fatalf("with one node of three down: %v", err)
	}
	if _, err := a.Release(ctx, lease); err != nil {
		t.Fatalf("release with one node down: %v", err)
	}
	if err := nodes[1].Kill(); err != nil {
		t.Fatal(err)
	}
	// Through go-redis a node that is down looks like one that does not
	// answer (it retries the dial until the timeout): the attempt may
	// have landed as far as the client can tell, so the outcome is
	// unknown rather than a failure; either way there is no lease.
	if lease, err := a.Acquire(ctx, majorityKey); err == nil {
		t.Errorf("with two nodes of three down: acquired %s", lease.Token)
	}
	for _, n := range nodes[1:] {
		if err := n.Restart(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRedlockReleasesEveryNode is seed 002's "加锁失败" case: one node runs
// the SET but its acknowledgement is lost, so the client counts that node as
// failed. The key is there all the same; a release that skipped the node
// would leave it for the whole TTL. Redlock's release goes to every node.
func TestRedlockReleasesEveryNode(t *testing.T) {
	ctx := context.Background()
	l, direct := masters(t, 3)
	netw, err := cluster.StartNetwork(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { netw.Close() })
	var conns []redis.UniversalClient
	for _, n := range l.Nodes() {
		c := redis.NewClient(&redis.Options{Addr: n.Addr(), Dialer: netw.Dialer("c0"), MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
	}
	// Open the connections first: a reply lost on a fresh connection is
	// the handshake's, and the SET would never be sent.
	for _, c := range conns {
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	lost := l.Nodes()[2]
	paths := netw.Paths("c0", lost.Addr())
	if _, err := paths[0].Proxy.AddToxic("lost-reply", "timeout", "downstream", 1,
		toxiclient.Attributes{"timeout": 0}); err != nil {
		t.Fatal(err)
	}

	const ttl, key = 5 * time.Second, "lock:ack"
	lk := newLock(t, "redlock", conns, ttl, 0, locks.Hooks{})
	lease, err := lk.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("acquire with one lost acknowledgement: %v", err)
	}
	// The acknowledgement was lost once; the network is fine again.
	if err := paths[0].Proxy.RemoveToxic("lost-reply"); err != nil {
		t.Fatal(err)
	}
	got := holders(t, direct, key)
	if got[2] != lease.Token {
		t.Fatalf("node %s holds %q: the SET whose reply was lost should have landed", lost.Name, got[2])
	}
	if pttl := direct[2].PTTL(ctx, key).Val(); pttl < ttl/2 {
		t.Fatalf("the orphan's ttl %v: it would have refused every client for that long", pttl)
	}
	deleted, err := lk.Release(ctx, lease)
	if err != nil || !deleted {
		t.Fatalf("release: deleted %v, %v", deleted, err)
	}
	if got := holders(t, direct, key); count(got, "") != 3 {
		t.Errorf("after release: %q; the node whose ack was lost must be released too", got)
	}
}

// TestRedlockWatchdog checks the extension: work three times the TTL keeps
// the key on every node, each extension reported through Hooks.Renew, and
// once a majority no longer has our key the watchdog reports the lease lost
// and stops.
func TestRedlockWatchdog(t *testing.T) {
	ctx := context.Background()
	_, direct := masters(t, 3)
	const ttl, key = 300 * time.Millisecond, "lock:w"
	var mu sync.Mutex
	var outcomes []error
	hooks := locks.Hooks{Renew: func(*locks.Lease) func(error) {
		return func(err error) {
			mu.Lock()
			outcomes = append(outcomes, err)
			mu.Unlock()
		}
	}}
	lk := newLock(t, "redlock-watchdog", clients(direct), ttl, 0, hooks)
	lease, err := lk.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ttl)
	if got := count(holders(t, direct, key), lease.Token); got != 3 {
		t.Fatalf("after 3 TTLs of work the token is on %d nodes, want 3", got)
	}
	mu.Lock()
	extended := 0
	for _, e := range outcomes {
		if e == nil {
			extended++
		}
	}
	mu.Unlock()
	if extended < 3 {
		t.Errorf("%d extensions in 3 TTLs, want at least 3 (every TTL/3)", extended)
	}
	// A majority forgets the key (as two nodes restarted empty would).
	direct[0].Del(ctx, key)
	direct[1].Del(ctx, key)
	time.Sleep(ttl)
	mu.Lock()
	last := outcomes[len(outcomes)-1]
	n := len(outcomes)
	mu.Unlock()
	if !errors.Is(last, locks.ErrNotAcquired) {
		t.Errorf("last renewal: %v, want ErrNotAcquired (lease lost)", last)
	}
	time.Sleep(ttl)
	mu.Lock()
	if len(outcomes) != n {
		t.Errorf("the watchdog went on after losing the lease: %d renewals, then %d", n, len(outcomes))
	}
	mu.Unlock()
	// Every key is gone by now; the release cannot claim it deleted the lock.
	if deleted, _ := lk.Release(ctx, lease); deleted {
		t.Error("the release of a lost lease reports it deleted the lock")
	}
}

func TestRedlockNeedsThreeMasters(t *testing.T) {
	e, err := locks.Builtin().Get("redlock")
	if err != nil {
		t.Fatal(err)
	}
	if e.Nodes != locks.RedlockNodes {
		t.Errorf("Entry.Nodes %d, want %d", e.Nodes, locks.RedlockNodes)
	}
	two := []redis.UniversalClient{redis.NewClient(&redis.Options{}), redis.NewClient(&redis.Options{})}
	defer two[0].Close()
	defer two[1].Close()
	_, err = e.New(locks.Config{Nodes: two, TTL: time.Second, Rand: rand.New(rand.NewSource(1)),
		NewToken: func() string { return "t" }})
	if err == nil {
		t.Fatal("redlock built on two masters")
	}
}
