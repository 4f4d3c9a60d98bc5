package locktorture_test

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/summary"
	"github.com/locktorture/locktorture/workloads"
)

// flushKeys is a fault written outside the nemesis package: it deletes every
// key on each redis-server of the topology, as an operator's FLUSHALL would,
// so every live lock vanishes while its holder still works.
type flushKeys struct{}

func (flushKeys) Name() string { return "flush-keys" }

func (flushKeys) Available(t *nemesis.Target) error {
	if t.Topology == nil || len(t.Topology.Nodes()) == 0 {
		return fmt.Errorf("needs redis-server processes the harness started")
	}
	return nil
}

func (flushKeys) Start(ctx context.Context, t *nemesis.Target, _ *rand.Rand, mark nemesis.Marker) error {
	for _, n := range t.Topology.Nodes() {
		c := redis.NewClient(&redis.Options{Addr: n.Addr(), DisableIdentity: true})
		err := c.FlushAll(ctx).Err()
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("flush %s: %w", n.Name, err)
		}
	}
	mark.Began("every node")
	return nil
}

func (flushKeys) Heal(context.Context, *nemesis.Target) error { return nil }

// longHolds is a checker written outside the checker package: it flags any
// hold longer than a limit, the kind of house rule a team may gate on. It
// streams (checker.Windowed): a run judges it window by window, carrying
// each process's open hold across the cuts, so its memory stays bounded.
type longHolds struct{ limit time.Duration }

const kindLongHold checker.Kind = "long-hold"

func (longHolds) Name() string { return "long-holds" }

func (c longHolds) Check(ctx context.Context, h *history.History) checker.Result {
	return c.Start().Judge(ctx, checker.WholeWindow(h))
}

func (c longHolds) Start() checker.Judge {
	return &longHoldsJudge{limit: c.limit, acquired: map[int]history.Operation{}}
}

type longHoldsJudge struct {
	limit    time.Duration
	acquired map[int]history.Operation // by process
}

// Judge takes a window's operations in the order they completed: a
// process's acquire comes before its release, in this window or an
// earlier one.
func (c *longHoldsJudge) Judge(_ context.Context, w *checker.Window) checker.Result {
	res := checker.Result{Checker: "long-holds", Verdict: checker.Valid, Anomalies: []checker.Anomaly{}, Count: map[checker.Kind]int{}}
	acquired := c.acquired
	for _, op := range w.Ops {
		switch {
		case op.Op == history.Acquire && op.Status == history.OK:
			acquired[op.Process] = op
		case op.Op == history.Release:
			a, ok := acquired[op.Process]
			if ok && time.Duration(op.Call-a.Return) > c.limit {
				res.Count[kindLongHold]++
				res.Anomalies = append(res.Anomalies, checker.Anomaly{Kind: kindLongHold, Clients: []int{op.Client},
					Keys: []string{op.Key}, StartNS: a.Return, EndNS: op.Call, Severity: checker.SeveritySafety,
					Detail: fmt.Sprintf("client %d held %s for longer than %v", op.Client, op.Key, c.limit)})
			}
			delete(acquired, op.Process)
		}
	}
	if len(res.Anomalies) > 0 {
		res.Verdict = checker.Invalid
	}
	return res
}

// TestOutsideFaultAndChecker registers a fault and a checker from outside
// the module's packages through Options, runs them against real Redis, and
// finds the fault's windows in the history and summary and the checker's
// anomalies in the report: the same doors the built-ins use.
func TestOutsideFaultAndChecker(t *testing.T) {
	clustertest.Need(t)
	regs := locktorture.Builtin()
	if err := regs.Faults.Register(nemesis.Entry{Name: "flush-keys", Summary: "FLUSHALL on every node",
		New: func(nemesis.Options) nemesis.Fault { return flushKeys{} }}); err != nil {
		t.Fatal(err)
	}
	if err := regs.Checkers.Register(checker.Entry{Name: "long-holds", Summary: "holds longer than 30ms",
		New: func(checker.MutexOptions) checker.Checker { return longHolds{limit: 30 * time.Millisecond} }}); err != nil {
		t.Fatal(err)
	}
	res, err := locktorture.Run(context.Background(), locktorture.Options{
		Lock: "token", Registries: regs, Faults: []string{"flush-keys"}, Checkers: []string{"long-holds"},
		Clients: 3, TTL: time.Second, HoldMin: 10 * time.Millisecond, HoldMax: 60 * time.Millisecond,
		Duration: 2 * time.Second, NemesisInterval: 300 * time.Millisecond, Seed: 1, OutDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := history.Load(filepath.Join(res.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var starts, heals int
	for _, e := range h.Infos() {
		if e.Fault != "flush-keys" {
			continue
		}
		switch e.Op {
		case history.FaultStart:
			starts++
		case history.FaultHeal:
			heals++
		}
	}
	if starts == 0 || starts != heals {
		t.Fatalf("flush-keys: %d starts and %d heals in the history", starts, heals)
	}
	if res.Report.Count[kindLongHold] == 0 {
		t.Fatalf("no %s anomaly from the outside checker: %v", kindLongHold, res.Report.Count)
	}
	sum := readSummary(t, res.Dir)
	if got := len(sum.Faults); got != starts {
		t.Errorf("summary.json lists %d fault windows, the history %d", got, starts)
	}
	for i, w := range h.Faults() {
		if i < len(sum.Faults) && sum.Faults[i] != w {
			t.Errorf("summary fault window %d is %+v, history says %+v", i, sum.Faults[i], w)
		}
	}
}

// ExampleRegistries shows the one way to extend a run: each kind of
// extension is an entry registered in a clone of the built-ins, and the run
// names it. Built-in entries are registered through the same calls.
func ExampleRegistries() {
	regs := locktorture.Builtin()
	_ = regs.Locks.Register(locks.Entry{Name: "mine", Summary: "my lock", New: func(cfg locks.Config) (locks.Lock, error) {
		return newMyLock(cfg), nil // cfg.Nodes are go-redis clients through the fault proxies
	}})
	_ = regs.Faults.Register(nemesis.Entry{Name: "flush-keys", Summary: "FLUSHALL on every node",
		New: func(nemesis.Options) nemesis.Fault { return flushKeys{} }})
	_ = regs.Checkers.Register(checker.Entry{Name: "long-holds", Summary: "holds longer than 100ms",
		New: func(checker.MutexOptions) checker.Checker { return longHolds{limit: 100 * time.Millisecond} }})
	_ = regs.Workloads.Register(workloads.Entry{Name: "mutex-audited", Summary: "the mutex workload, judged by long-holds too",
		Checkers: []string{"long-holds"},
		New: func(r *workloads.Runner, shape workloads.MutexOptions) (workloads.Workload, error) {
			return workloads.NewMutex(r, shape)
		}})

	res, err := locktorture.Run(context.Background(), locktorture.Options{
		Lock: "mine", Workload: "mutex-audited", Faults: []string{"flush-keys", "pause-client"},
		Registries: regs, Clients: 8, TTL: 500 * time.Millisecond, Duration: 20 * time.Second, Seed: 1, OutDir: "results",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Verdict, res.Report.Count)
}

// myLock stands for a lock written in another module: SET NX PX and a plain
// DEL, enough to show the wiring.
type myLock struct{ cfg locks.Config }

func newMyLock(cfg locks.Config) *myLock { return &myLock{cfg: cfg} }

func (l *myLock) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	token := l.cfg.NewToken()
	ok, err := l.cfg.Nodes[0].SetNX(ctx, key, token, l.cfg.TTL).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, locks.ErrNotAcquired
	}
	return &locks.Lease{Key: key, Token: token, TTL: l.cfg.TTL}, nil
}

func (l *myLock) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	n, err := l.cfg.Nodes[0].Del(ctx, lease.Key).Result()
	return n > 0, err
}

// readSummary reads the summary.json a run left in dir, as strictly as the
// report and the matrix do.
func readSummary(t *testing.T, dir string) summary.Summary {
	t.Helper()
	s, err := summary.Read(dir)
	if err != nil || s == nil {
		t.Fatalf("summary.json of %s: %v", dir, err)
	}
	return *s
}
