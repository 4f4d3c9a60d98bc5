package workloads_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/workloads"
)

// TestWorkloadsReportLeaseSteps: a workload tells the faults each outer
// acquire and release, and when the release has returned. A nested acquire
// reported as Acquiring would tell them its key was free again while its
// process holds it; a release not reported as Releasing would keep a fault
// aimed at releases waiting for the rest of its window; one whose return
// goes unreported (Released) would leave its key held, or, reported
// early, let a fault take an attempt that loses to the release still on
// its way for one that wins.
func TestWorkloadsReportLeaseSteps(t *testing.T) {
	const ttl = time.Second
	opts := workloads.MutexOptions{Keys: 1, HoldMin: 10 * time.Millisecond, HoldMax: 30 * time.Millisecond, TTL: ttl}
	cases := []struct {
		lock     string
		workload func(*workloads.Runner) (workloads.Workload, error)
		nested   bool // the run must show nested acquires
	}{
		{"token", func(r *workloads.Runner) (workloads.Workload, error) { return workloads.NewMutex(r, opts) }, false},
		{"reentrant", func(*workloads.Runner) (workloads.Workload, error) {
			return workloads.NewReentrant(workloads.ReentrantOptions{MutexOptions: opts, MaxDepth: 3})
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.lock, func(t *testing.T) {
			steps, nested := leaseSteps(t, tc.lock, tc.workload)
			if tc.nested && nested == 0 {
				t.Fatal("no nested acquire was granted: the run shows nothing")
			}
			checkLeaseSteps(t, steps)
			t.Logf("%d steps, %d nested acquires", len(steps), nested)
		})
	}
}

// leaseSteps runs three clients of the workload on one key for a second
// and returns the protocol steps they reported and how many nested
// acquires were granted.
func leaseSteps(t *testing.T, lockName string, newWorkload func(*workloads.Runner) (workloads.Workload, error)) ([]nemesis.ProtocolEvent, int) {
	topo, _ := clustertest.Topology(t, "single", cluster.TopologyOptions{})
	addr := topo.Nodes()[0].Addr()
	lock, err := locks.Builtin().Get(lockName)
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
	w, err := newWorkload(r)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r.Run(ctx, w, time.Second)
	mu.Lock()
	defer mu.Unlock()
	return steps, nested
}

// checkLeaseSteps holds each client's steps to their order: Acquiring,
// then Acquired or another Acquiring (refused); once Acquired, Releasing
// before anything else, then Released before the next Acquiring.
func checkLeaseSteps(t *testing.T, steps []nemesis.ProtocolEvent) {
	t.Helper()
	const (
		idle = iota
		holding
		releasing
	)
	state := map[int]int{}
	acquired, released, returned := 0, 0, 0
	for _, e := range steps {
		switch e.Kind {
		case nemesis.Acquiring:
			if state[e.Client] != idle {
				t.Fatalf("client %d reported Acquiring while it held or released %s: a nested acquire, or a release it did not report", e.Client, e.Key)
			}
		case nemesis.Acquired:
			if state[e.Client] != idle {
				t.Fatalf("client %d reported Acquired twice without a release (a nested acquire?)", e.Client)
			}
			state[e.Client] = holding
			acquired++
		case nemesis.Releasing:
			if state[e.Client] != holding {
				t.Fatalf("client %d reported Releasing with nothing held", e.Client)
			}
			state[e.Client] = releasing
			released++
		case nemesis.Released:
			if state[e.Client] != releasing {
				t.Fatalf("client %d reported Released with no release under way", e.Client)
			}
			state[e.Client] = idle
			returned++
		}
	}
	if released == 0 || released < acquired-3 {
		t.Errorf("%d outer acquires reported, %d releases: the outer release must say Releasing", acquired, released)
	}
	if returned < released-3 {
		t.Errorf("%d releases reported, %d returned: a release must say Released when it returns", released, returned)
	}
}
