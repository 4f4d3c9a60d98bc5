package locks_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/locks"
	"github.com/redis/go-redis/v9"
)

// masterWithReplica starts a master and one replica of it, and returns
// them with a direct client to each.
func masterWithReplica(t *testing.T) (replica *cluster.Node, master, rep *redis.Client) {
	t.Helper()
	clustertest.Need(t)
	ctx := context.Background()
	l, err := cluster.NewLocal(cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	// No 5s wait before the first (diskless) sync.
	m, err := l.StartNode(ctx, "master", []string{"--repl-diskless-sync-delay", "0"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.StartNode(ctx, "replica", []string{"--replicaof", "127.0.0.1", strconv.Itoa(m.Port)})
	if err != nil {
		t.Fatal(err)
	}
	master = redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	rep = redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
	t.Cleanup(func() { master.Close(); rep.Close() })
	// Linked up and acknowledging: a write is acknowledged within 100ms.
	deadline := time.Now().Add(10 * time.Second)
	for {
		master.Set(ctx, "probe", "1", 0)
		if n, _ := master.Wait(ctx, 1, 100*time.Millisecond).Result(); n == 1 {
			break
		}
		if time.Now().After(deadline) {
			info, _ := rep.Info(ctx, "replication").Result()
			t.Fatalf("replica never acknowledged a write: %s", info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return r, master, rep
}

func tokenWait(t *testing.T, c redis.UniversalClient, ttl time.Duration) locks.Lock {
	t.Helper()
	e, err := locks.Builtin().Get("token-wait")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	lk, err := e.New(locks.Config{Nodes: []redis.UniversalClient{c}, TTL: ttl,
		Rand: rand.New(rand.NewSource(1)), NewToken: func() string { n++; return fmt.Sprint("tw-", n) }})
	if err != nil {
		t.Fatal(err)
	}
	return lk
}

// TestTokenWait: an acquire returns only once a replica has the key; with
// the replica stalled (SIGSTOP: connected, acknowledging nothing) the
// attempt fails and the key is given back, so nothing is left that a
// failover could lose or that blocks the next client.
func TestTokenWait(t *testing.T) {
	ctx := context.Background()
	replica, master, rep := masterWithReplica(t)
	lk := tokenWait(t, master, 2*time.Second)

	lease, err := lk.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("acquire with a live replica: %v", err)
	}
	if v, err := rep.Get(ctx, "k").Result(); err != nil || v != lease.Token {
		t.Fatalf("acquire returned before the replica had the key: %q, %v", v, err)
	}
	if deleted, err := lk.Release(ctx, lease); err != nil || !deleted {
		t.Fatalf("release: deleted %v, %v", deleted, err)
	}

	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = replica.Resume() })
	start := time.Now()
	_, err = lk.Acquire(ctx, "k")
	if !errors.Is(err, locks.ErrNotAcquired) || !strings.Contains(err.Error(), "no replica acknowledged") {
		t.Fatalf("acquire with a stalled replica: %v, want a refusal for want of an acknowledgement", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refusal took %v; WAIT should give up after at most 100ms", d)
	}
	if n, _ := master.Exists(ctx, "k").Result(); n != 0 {
		t.Error("the refused lock's key is still on the master")
	}
}
