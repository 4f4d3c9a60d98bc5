package workloads_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/testredis"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/workloads"
)

// TestReentrantReportsOuterSteps: the reentrant workload tells the faults
// its outer acquire and release only. A nested acquire reported as
// Acquiring would tell them its key was free again while its process
// holds it; a release not reported as Releasing would keep a fault aimed
// at releases waiting for the rest of its window.
func TestReentrantReportsOuterSteps(t *testing.T) {
	topo, _ := testredis.Topology(t, "single", cluster.TopologyOptions{})
	addr := topo.Nodes()[0].Addr()
	lock, err := locks.Builtin().Get("reentrant")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		steps  []nemesis.ProtocolEvent
		nested int
	)
	const ttl = time.Second
	rec := history.NewRecorder(nil, nil, 0, history.KeepNone(), history.OnEvent(func(e history.Event) {
		if e.Op == history.NestedAcquire && e.Type == history.OK {
			mu.Lock()
			nested++
			mu.Unlock()
		}
	}))
	defer rec.Close()
	r, err := workloads.NewRunner(workloads.Config{
		Clients: 3, Keys: 1, TTL: ttl, Seed: 1,
		Lock: lock.New, LockConfig: locks.Config{TTL: ttl, Wait: ttl},
		Connect: func(_ int, g *workloads.Gate) ([]redis.UniversalClient, error) {
			dial := func(ctx context.Context, network, a string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, a)
				if err != nil {
					return nil, err
				}
				return g.Conn(c), nil
			}
			return []redis.UniversalClient{redis.NewClient(&redis.Options{Addr: addr, Dialer: dial})}, nil
		},
		Recorder: rec,
		Observe: func(e nemesis.ProtocolEvent) {
			mu.Lock()
			steps = append(steps, e)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	w, err := workloads.NewReentrant(workloads.ReentrantOptions{
		MutexOptions: workloads.MutexOptions{Keys: 1, HoldMin: 10 * time.Millisecond, HoldMax: 30 * time.Millisecond, TTL: ttl},
		MaxDepth:     3,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r.Run(ctx, w, time.Second)

	mu.Lock()
	defer mu.Unlock()
	if nested == 0 {
		t.Fatal("no nested acquire was granted: the run shows nothing")
	}
	// Per client: Acquiring, then Acquired or another Acquiring (refused),
	// and once Acquired, Releasing before anything else of the three.
	holding := map[int]bool{}
	acquired, released := 0, 0
	for _, e := range steps {
		switch e.Kind {
		case nemesis.Acquiring:
			if holding[e.Client] {
				t.Fatalf("client %d reported Acquiring while it held %s: a nested acquire, or a release it did not report", e.Client, e.Key)
			}
		case nemesis.Acquired:
			if holding[e.Client] {
				t.Fatalf("client %d reported Acquired twice without a release (a nested acquire?)", e.Client)
			}
			holding[e.Client] = true
			acquired++
		case nemesis.Releasing:
			if !holding[e.Client] {
				t.Fatalf("client %d reported Releasing with nothing held", e.Client)
			}
			holding[e.Client] = false
			released++
		}
	}
	if released == 0 || released < acquired-3 {
		t.Errorf("%d outer acquires reported, %d releases: the outer release must say Releasing", acquired, released)
	}
	t.Logf("%d outer acquires, %d releases, %d nested acquires", acquired, released, nested)
}
