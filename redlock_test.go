package locktorture_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/settings"
	"github.com/redis/go-redis/v9"
)

// These runs put Redlock (and, for the clock, a single-node token lock)
// under the faults of the Redlock debate on real redis-servers, and check
// what seeds 001 and 002 and the debate claim: a node restarting empty
// breaks the lock within the lease, its two fixes (a delayed restart, AOF
// fsync always) do not; a clock jump breaks it together with a partition; a
// minority partition only slows it; a lost acknowledgement leaves no key
// behind once the holder released.

func needRedlockDeps(t *testing.T, faketime bool) {
	t.Helper()
	clustertest.Need(t)
	if faketime {
		if _, err := exec.LookPath("faketime"); err != nil {
			t.Skip("faketime not installed (apt-get install -y faketime)")
		}
	}
}

// redlockOptions is a few seconds of four clients on N masters with a short
// TTL, so a fault that breaks the lock shows it quickly.
func redlockOptions(lock string, nodes int, seed int64) locktorture.Options {
	return locktorture.Options{
		Lock: lock, Topology: "redlock", Nodes: nodes, Clients: 4, Keys: 1, Duration: 5 * time.Second,
		TTL: 400 * time.Millisecond, HoldMin: 5 * time.Millisecond, HoldMax: 30 * time.Millisecond, Seed: seed,
		NemesisInterval: 300 * time.Millisecond, CheckTimeout: 30 * time.Second,
	}
}

// restartOptions make restart-empty bite fast: three masters, holds long
// enough for two restarts to land inside one, restarts back to back.
func restartOptions(nemesis string, nodes int, seed int64) locktorture.Options {
	o := redlockOptions("redlock", nodes, seed)
	o.TTL, o.HoldMin, o.HoldMax = 500*time.Millisecond, 150*time.Millisecond, 350*time.Millisecond
	o.Faults, o.NemesisInterval, o.NemesisDuration = locktorture.ParseList(nemesis), 50*time.Millisecond, time.Millisecond
	return o
}

func runRedlock(t *testing.T, opts locktorture.Options) *locktorture.Result {
	t.Helper()
	res := runLogged(t, opts)
	if res.Stats.Acquired == 0 {
		t.Fatalf("%s: no acquire succeeded; the run shows nothing", opts.Lock)
	}
	if len(opts.Faults) > 0 && redlockFaultStarts(t, res.Dir) == 0 {
		t.Fatalf("%s: the nemesis %s never started", opts.Lock, opts.Faults)
	}
	// Every server the run started (restarted ones too, and those under
	// env + libfaketime) is this process's child until Run stops it.
	if out, err := exec.Command("pgrep", "-P", strconv.Itoa(os.Getpid())).Output(); err == nil && len(out) > 0 {
		t.Errorf("processes left after the run: %s", out)
	}
	return res
}

// redlockFaultStarts counts the faults a run's history says were started.
func redlockFaultStarts(t *testing.T, dir string) int {
	t.Helper()
	h, err := history.Load(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range h.Events {
		if e.Op == history.FaultStart {
			n++
		}
	}
	return n
}

func redlockDoubleHolders(res *locktorture.Result) map[checker.Class]int {
	out := map[checker.Class]int{}
	for _, a := range res.Report.Anomalies {
		if a.Kind == checker.KindDoubleHolder {
			out[a.Class]++
		}
	}
	return out
}

func redlockValid(t *testing.T, res *locktorture.Result) {
	t.Helper()
	if res.Verdict != checker.Valid {
		for i, a := range res.Report.Anomalies {
			if i < 5 {
				t.Logf("  %s (%s): %s", a.Kind, a.Class, a.Detail)
			}
		}
		t.Errorf("verdict %s, want valid; counts %v", res.Verdict, res.Report.Count)
	}
}

// TestRedlockPartitionMinority cuts every client from a minority of the
// masters now and then: the lock stays safe, with fewer acquires than the
// same seed without the fault (each attempt waits out the cut nodes'
// timeouts, and contenders split the bare majority that is left).
func TestRedlockPartitionMinority(t *testing.T) {
	needRedlockDeps(t, false)
	base := redlockOptions("redlock", 5, 4)
	base.Clients = 3
	calm := runRedlock(t, base)
	redlockValid(t, calm)
	cut := base
	cut.Faults, cut.NemesisDuration = []string{"partition-minority"}, 600*time.Millisecond
	cut.Settings = settings.Values{"partition-clients": "all"}
	res := runRedlock(t, cut)
	redlockValid(t, res)
	if res.Stats.Acquired >= calm.Stats.Acquired {
		t.Errorf("%d acquires under partition-minority, %d without: want fewer", res.Stats.Acquired, calm.Stats.Acquired)
	}
}

// TestRedlockWatchdogOverrun: work longer than the TTL (7/6 of it, one hold
// in five) outlives a Redlock lease, and the extension on a majority every
// TTL/3 (redlock-watchdog, renewals recorded as refreshes) covers it.
func TestRedlockWatchdogOverrun(t *testing.T) {
	needRedlockDeps(t, false)
	o := redlockOptions("redlock", 3, 3)
	o.Overrun = 0.2
	res := runRedlock(t, o)
	if redlockDoubleHolders(res)[checker.ClassLeaseOutlived] == 0 {
		t.Errorf("redlock with work past the TTL: double holders %v, want one classed lease-outlived",
			redlockDoubleHolders(res))
	}
	o.Lock = "redlock-watchdog"
	res = runRedlock(t, o)
	redlockValid(t, res)
	h, err := history.Load(filepath.Join(res.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	refreshed := 0
	for _, e := range h.Events {
		if e.Op == history.Refresh && e.Type == history.OK {
			refreshed++
		}
	}
	if refreshed == 0 {
		t.Error("redlock-watchdog recorded no successful refresh")
	}
}

// TestRedlockLostReply drops the replies of half the connections to one
// master (seed 002's "加锁失败": the SET ran, its acknowledgement never came
// back). After every release each master is inspected directly, not through
// the client's proxies: none may still hold the released token half a TTL
// later, which would otherwise refuse every other client until its TTL.
func TestRedlockLostReply(t *testing.T) {
	needRedlockDeps(t, false)
	ins := newInspector(t)
	reg := locks.Builtin()
	if err := reg.Register(locks.Entry{Name: "redlock-inspected", Nodes: locks.RedlockNodes, New: ins.wrap("redlock")}); err != nil {
		t.Fatal(err)
	}
	o := redlockOptions("redlock-inspected", 3, 5)
	o.Registries.Locks, o.Faults, o.NemesisDuration = reg, []string{"lost-reply"}, time.Second
	res := runRedlock(t, o)
	for _, a := range res.Report.Anomalies {
		if a.Kind == checker.KindDoubleHolder || a.Kind == checker.KindNonlinearizable {
			t.Errorf("%s: %s", a.Kind, a.Detail)
		}
	}
	released, left := ins.released.Load(), ins.left.Load()
	t.Logf("%d releases inspected, %d left a key behind", released, left)
	if released == 0 {
		t.Fatal("no release was inspected")
	}
	if left > 0 {
		t.Errorf("%d of %d releases left the token on some master: %v", left, released, ins.examples())
	}
}

// inspector checks, after each release, that no master still holds the
// released token. It reads each master directly: the address a lock's
// client dials is the master's own (its dialer goes through the proxy).
type inspector struct {
	t *testing.T

	released, left atomic.Int64
	mu             sync.Mutex
	direct         map[string]*redis.Client
	seen           []string
}

func newInspector(t *testing.T) *inspector {
	ins := &inspector{t: t, direct: map[string]*redis.Client{}}
	t.Cleanup(func() {
		ins.mu.Lock()
		defer ins.mu.Unlock()
		for _, c := range ins.direct {
			c.Close()
		}
	})
	return ins
}

func (ins *inspector) client(addr string) *redis.Client {
	ins.mu.Lock()
	defer ins.mu.Unlock()
	c := ins.direct[addr]
	if c == nil {
		c = redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true})
		ins.direct[addr] = c
	}
	return c
}

func (ins *inspector) wrap(name string) locks.Factory {
	return func(cfg locks.Config) (locks.Lock, error) {
		e, err := locks.Builtin().Get(name)
		if err != nil {
			return nil, err
		}
		lk, err := e.New(cfg)
		if err != nil {
			return nil, err
		}
		var addrs []string
		for _, n := range cfg.Nodes {
			c, ok := n.(*redis.Client)
			if !ok {
				return nil, fmt.Errorf("inspector: node client %T is not a *redis.Client", n)
			}
			addrs = append(addrs, c.Options().Addr)
		}
		return &inspected{Lock: lk, ins: ins, addrs: addrs}, nil
	}
}

func (ins *inspector) examples() []string {
	ins.mu.Lock()
	defer ins.mu.Unlock()
	sort.Strings(ins.seen)
	return ins.seen[:min(len(ins.seen), 5)]
}

type inspected struct {
	locks.Lock
	ins   *inspector
	addrs []string
}

// Release releases, then polls every master until the token is gone. A
// node that missed the release would keep it for the rest of its TTL (over
// 300 ms here); one still holding it half a TTL later counts as left behind.
func (l *inspected) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	deleted, err := l.Lock.Release(ctx, lease)
	if err != nil {
		return deleted, err
	}
	l.ins.released.Add(1)
	ictx := context.WithoutCancel(ctx)
	deadline := time.Now().Add(lease.TTL / 2)
	for _, addr := range l.addrs {
		for {
			v, gerr := l.ins.client(addr).Get(ictx, lease.Key).Result()
			if gerr != nil && !errors.Is(gerr, redis.Nil) {
				l.ins.t.Errorf("inspect %s: %v", addr, gerr)
				break
			}
			if v != lease.Token {
				break
			}
			if time.Now().After(deadline) {
				l.ins.left.Add(1)
				l.ins.mu.Lock()
				l.ins.seen = append(l.ins.seen, lease.Token+" on "+addr)
				l.ins.mu.Unlock()
				return deleted, err
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return deleted, err
}

// TestRedlockFaultsNeedMasters: the Redlock faults refuse a topology that is
// not N independent masters, and Redlock refuses one node, with a usage
// error rather than a run that shows nothing.
func TestRedlockFaultsNeedMasters(t *testing.T) {
	needRedlockDeps(t, false)
	for _, tc := range []struct{ lock, topology, nemesis string }{
		{"token", "single", "restart-empty"},
		{"token", "single", "partition-minority"},
		{"redlock", "single", ""},
		{"redlock", "redlock", "partition-minority"}, // --nodes 2
	} {
		o := redlockOptions(tc.lock, 0, 1)
		o.Topology, o.Faults, o.Duration, o.OutDir = tc.topology, locktorture.ParseList(tc.nemesis), time.Second, t.TempDir()
		if tc.topology == "redlock" {
			o.Nodes = 2
		}
		_, err := locktorture.Run(context.Background(), o)
		if err == nil || !locktorture.IsUsage(err) {
			t.Errorf("%s on %s under %q: err %v, want a usage error", tc.lock, tc.topology, tc.nemesis, err)
		}
	}
}

// TestMeasureRedlock is not a test but the measurement behind the report:
// time to first violation over ten seeds, and the acquires a minority
// partition costs. It runs only with LOCKTORTURE_MEASURE=1:
//
//	LOCKTORTURE_MEASURE=1 go test -run TestMeasureRedlock -v -timeout 2h .
func TestMeasureRedlock(t *testing.T) {
	if os.Getenv("LOCKTORTURE_MEASURE") != "1" {
		t.Skip("set LOCKTORTURE_MEASURE=1 to measure (tens of minutes)")
	}
	needRedlockDeps(t, true)
	seeds := 10
	if s := os.Getenv("LOCKTORTURE_SEEDS"); s != "" {
		seeds, _ = strconv.Atoi(s)
	}
	limit := 60 * time.Second
	measureBroken(t, seeds, limit)
	measureControls(t, seeds, limit)
	measurePartitionCost(t, seeds)
}

// measureScenario is one setting TestMeasureRedlock runs over its seeds.
type measureScenario struct {
	name string
	opts func(seed int64) locktorture.Options
}

// overSeeds runs the scenario with seeds 1..seeds (see measureRun) and
// returns what line says of each run.
func (sc measureScenario) overSeeds(t *testing.T, seeds int, limit time.Duration, stopAtFirst bool,
	line func(seed int, res *locktorture.Result, first time.Duration) string) []string {
	var out []string
	for s := 1; s <= seeds; s++ {
		res, first := measureRun(t, sc.opts(int64(s)), limit, stopAtFirst)
		out = append(out, line(s, res, first))
	}
	return out
}

// restartsBySeed is restartOptions(fault, nodes, seed) for each seed.
func restartsBySeed(fault string, nodes int) func(seed int64) locktorture.Options {
	return func(s int64) locktorture.Options { return restartOptions(fault, nodes, s) }
}

// measureRun runs opts for limit (or, with stopAtFirst, until the first
// anomaly) and returns the result and when its first double holder began,
// -1 if none did.
func measureRun(t *testing.T, opts locktorture.Options, limit time.Duration, stopAtFirst bool) (*locktorture.Result, time.Duration) {
	t.Helper()
	opts.OutDir = filepath.Join(os.TempDir(), "locktorture-measure")
	opts.Duration = limit
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if stopAtFirst {
		opts.Progress = func(s locktorture.Status) {
			if s.Anomalies > 0 {
				cancel()
			}
		}
	}
	res, err := locktorture.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	first := time.Duration(-1)
	for _, a := range res.Report.Anomalies {
		if a.Kind == checker.KindDoubleHolder && (first < 0 || time.Duration(a.StartNS) < first) {
			first = time.Duration(a.StartNS)
		}
	}
	return res, first
}

// measureBroken logs, for each setting that breaks a lock, the time to
// the first double holder of each seed.
func measureBroken(t *testing.T, seeds int, limit time.Duration) {
	broken := []measureScenario{
		{"redlock restart-empty, 5 masters (ttl 500ms, hold 150-350ms, restarts back to back)", restartsBySeed("restart-empty", 5)},
		{"redlock restart-empty, 3 masters (the test's settings)", restartsBySeed("restart-empty", 3)},
		{"redlock clock-jump-partition, 3 masters (the test's settings)", clockPartitionOptions},
		{"token clock-jump, 1 node (the test's settings)", func(s int64) locktorture.Options {
			o := redlockOptions("token", 0, s)
			o.Topology, o.Faults = "single", []string{"clock-jump"}
			return o
		}},
	}
	for _, sc := range broken {
		times := sc.overSeeds(t, seeds, limit, true, func(s int, res *locktorture.Result, first time.Duration) string {
			return fmt.Sprintf("seed %d: %v %v", s, first.Round(time.Millisecond), redlockDoubleHolders(res))
		})
		t.Logf("%s: time to first double-holder:\n  %s", sc.name, redlockLines(times))
	}
}

// measureControls logs the verdicts of the restarts Redlock survives over
// the whole limit of each seed.
func measureControls(t *testing.T, seeds int, limit time.Duration) {
	controls := []measureScenario{
		{"redlock restart-delayed, 5 masters", restartsBySeed("restart-delayed", 5)},
		{"redlock restart-fsync, 5 masters", restartsBySeed("restart-fsync", 5)},
	}
	for _, sc := range controls {
		out := sc.overSeeds(t, seeds, limit, false, func(s int, res *locktorture.Result, _ time.Duration) string {
			return fmt.Sprintf("seed %d: %s %v (%d acquired)", s, res.Verdict, res.Report.Count, res.Stats.Acquired)
		})
		t.Logf("%s over %v:\n  %s", sc.name, limit, redlockLines(out))
	}
}

// measurePartitionCost logs the acquires a minority partition costs,
// cutting one client or all, against no fault.
func measurePartitionCost(t *testing.T, seeds int) {
	var out []string
	for s := 1; s <= seeds; s++ {
		for _, scope := range []string{"", "one", "all"} {
			o := redlockOptions("redlock", 5, int64(s))
			o.Clients = 3
			if scope != "" {
				o.Faults, o.NemesisDuration = []string{"partition-minority"}, 600*time.Millisecond
				o.Settings = settings.Values{"partition-clients": scope}
			}
			o.Duration = 20 * time.Second
			o.OutDir = filepath.Join(os.TempDir(), "locktorture-measure")
			res, err := locktorture.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			what := "no fault"
			if scope != "" {
				what = "partition-minority, " + scope + " client(s) cut"
			}
			out = append(out, fmt.Sprintf("seed %d %s: %d acquired, %s %v", s, what, res.Stats.Acquired, res.Verdict, res.Report.Count))
		}
	}
	t.Logf("partition-minority vs no fault, 20 s each, 5 masters, 3 clients:\n  %s", redlockLines(out))
}

func redlockLines(s []string) string {
	out := ""
	for i, l := range s {
		if i > 0 {
			out += "\n  "
		}
		out += l
	}
	return out
}

// clockPartitionOptions give the cut client its chances: three clients that
// think between holds, so the one cut from a minority, slower to acquire,
// still wins the lock now and then while its master's clock jumps.
func clockPartitionOptions(seed int64) locktorture.Options {
	o := redlockOptions("redlock", 3, seed)
	o.Clients, o.HoldMin, o.HoldMax, o.Think = 3, 50*time.Millisecond, 150*time.Millisecond, 150*time.Millisecond
	o.Faults, o.NemesisDuration = []string{"clock-jump-partition"}, 1500*time.Millisecond
	return o
}
