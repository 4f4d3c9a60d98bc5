package locktorture_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/locks"
)

// prefixLock is a token lock as a library that names its own keys writes
// it: "app:" before the name it is asked to take. It does not say so; see
// namedPrefixLock.
type prefixLock struct{ cfg locks.Config }

const keyPrefix = "app:"

var releaseIfMine = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

func (l *prefixLock) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	token := l.cfg.NewToken()
	err := locks.Retry(ctx, l.cfg, func(ctx context.Context) (bool, error) {
		return l.cfg.Nodes[0].SetNX(ctx, keyPrefix+key, token, l.cfg.TTL).Result()
	})
	if err != nil {
		return nil, err
	}
	return &locks.Lease{Key: key, Token: token, TTL: l.cfg.TTL}, nil
}

func (l *prefixLock) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	if err := l.cfg.Hooks.Reach(ctx, "release"); err != nil {
		return false, err
	}
	n, err := releaseIfMine.Run(ctx, l.cfg.Nodes[0], []string{keyPrefix + lease.Key}, lease.Token).Int()
	return n == 1, err
}

// namedPrefixLock is prefixLock saying which key it writes.
type namedPrefixLock struct{ prefixLock }

func (*namedPrefixLock) StoredKey(key string) string { return keyPrefix + key }

// withPrefixLocks registers both: "prefixed" names its key, "prefixed-silent"
// does not.
func withPrefixLocks(t *testing.T) locktorture.Registries {
	t.Helper()
	regs := locktorture.Builtin()
	for _, e := range []locks.Entry{
		{Name: "prefixed", Summary: "token lock on app:<key>, named", New: func(cfg locks.Config) (locks.Lock, error) {
			return &namedPrefixLock{prefixLock{cfg}}, nil
		}},
		{Name: "prefixed-silent", Summary: "token lock on app:<key>, unnamed", New: func(cfg locks.Config) (locks.Lock, error) {
			return &prefixLock{cfg}, nil
		}},
	} {
		if err := regs.Locks.Register(e); err != nil {
			t.Fatal(err)
		}
	}
	return regs
}

// keyedRun is a lossy failover of topology at the settings a user picks:
// a few clients on two keys, a 1 s TTL, holds up to half of it.
func keyedRun(lock, topology string, faults ...string) locktorture.Options {
	return locktorture.Options{Lock: lock, Topology: topology, Faults: faults, Clients: 4, Keys: 2,
		TTL: time.Second, HoldMin: 10 * time.Millisecond, HoldMax: 500 * time.Millisecond,
		Duration: 15 * time.Second, Seed: 1, CheckTimeout: 30 * time.Second}
}

// TestLockThatNamesItsKey: a lock that writes "app:<key>" and says so is
// found by the faults that read leases on the servers (an aimed lossy
// failover on Sentinel, a forced one on Redis Cluster, whose slot is the
// written key's) and breaks; saying nothing, the failover waits all run for
// a lease under the key asked for, and the run is untested and says what
// the fault waited for and what would match.
func TestLockThatNamesItsKey(t *testing.T) {
	clustertest.Need(t, "redis-server", "redis-sentinel")
	regs := withPrefixLocks(t)
	for _, tc := range []struct {
		name string
		opts locktorture.Options
		want func(t *testing.T, res *locktorture.Result)
	}{
		{"fault-free holds", keyedRun("prefixed", "single"), func(t *testing.T, res *locktorture.Result) {
			if res.Verdict != checker.Valid {
				t.Errorf("verdict %s, counts %v", res.Verdict, res.Report.Count)
			}
		}},
		{"sentinel failover-lossy breaks", keyedRun("prefixed", "sentinel", "failover-lossy"), breaksWithinLease},
		{"cluster-failover-lossy breaks", keyedRun("prefixed", "cluster", "cluster-failover-lossy"), breaksWithinLease},
		{"unnamed key: untested, and says why", keyedRun("prefixed-silent", "sentinel", "failover-lossy"), func(t *testing.T, res *locktorture.Result) {
			if res.Verdict != checker.Untested {
				t.Fatalf("verdict %s, want untested; counts %v", res.Verdict, res.Report.Count)
			}
			notes := strings.Join(res.Report.Notes, "\n")
			t.Log(notes)
			for _, want := range []string{"failover-lossy", "waited for", "leases were granted", "under lock:", "key_template"} {
				if !strings.Contains(notes, want) {
					t.Errorf("the notes do not say %q:\n%s", want, notes)
				}
			}
			c := res.Stats.Faults.ByFault["failover-lossy"]
			if c.Unfinished == 0 || !strings.Contains(c.WaitedFor, "leases were granted") {
				t.Errorf("summary's fault count does not say what it waited for: %+v", c)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.Registries, o.OutDir = regs, t.TempDir()
			if strings.HasSuffix(tc.name, "breaks") {
				o.StopWhen = withinLeaseDouble // all it has to show
			} else {
				o.Duration = 6 * time.Second // some 20 leases: enough to hold, or to wait for in vain
			}
			res, err := locktorture.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			logRun(t, o, res)
			tc.want(t, res)
		})
	}
}

func withinLeaseDouble(a checker.Anomaly) bool {
	return a.Kind == checker.KindDoubleHolder && a.Class == checker.ClassWithinLease
}

func breaksWithinLease(t *testing.T, res *locktorture.Result) {
	t.Helper()
	if n, _ := switchDoubleHolders(res, checker.ClassWithinLease); n == 0 {
		t.Errorf("no double holder within the lease: verdict %s, counts %v", res.Verdict, res.Report.Count)
	}
}

// TestLockThatNamesItsKeyOverSeeds is the measurement of
// TestLockThatNamesItsKey's breaking cases over many seeds, run by hand:
// LOCKTORTURE_KEYS_SEEDS=20 go test -run OverSeeds -v . logs, for each
// seed, whether the prefixed lock broke within its lease under the lossy
// Sentinel failover and under the Redis Cluster one, and how soon.
func TestLockThatNamesItsKeyOverSeeds(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("LOCKTORTURE_KEYS_SEEDS"))
	if err != nil || n < 1 {
		t.Skip("a measurement: set LOCKTORTURE_KEYS_SEEDS to the number of seeds")
	}
	clustertest.Need(t, "redis-server", "redis-sentinel")
	regs := withPrefixLocks(t)
	for _, topo := range []struct{ topology, fault string }{{"single", ""}, {"sentinel", "failover-lossy"}, {"cluster", "cluster-failover-lossy"}} {
		kept := 0
		for seed := int64(1); seed <= int64(n); seed++ {
			o := keyedRun("prefixed", topo.topology)
			if topo.fault != "" {
				o = keyedRun("prefixed", topo.topology, topo.fault)
				o.StopWhen = withinLeaseDouble
			}
			o.Seed, o.Registries, o.OutDir = seed, regs, t.TempDir()
			res, err := locktorture.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			first := "-"
			for _, a := range res.Report.Anomalies {
				if withinLeaseDouble(a) {
					first = fmt.Sprintf("%.2fs", float64(a.StartNS)/1e9)
					break
				}
			}
			ok := res.Verdict == checker.Valid
			if topo.fault != "" {
				ok = first != "-"
			}
			if ok {
				kept++
			}
			t.Logf("%s %s seed %d: %s, first within-lease double holder %s", topo.topology, topo.fault, seed, res.Verdict, first)
		}
		t.Logf("%s %s: %d of %d seeds as expected", topo.topology, topo.fault, kept, n)
	}
}
