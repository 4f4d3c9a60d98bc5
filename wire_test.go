package locktorture_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/locks"
	"github.com/redis/go-redis/v9"
)

// toctouLock is a lock written outside the locks package, the way a user
// would, with protocol points of its own ("try", "set", "free") and no
// "attempt": GET the key, and if it is free SET it, which two clients can
// both do at once. Its double holders are the lock's fault while both
// leases are in force, and the checker must say so from what the harness
// saw on the wire, not from the names of the points.
type toctouLock struct{ cfg locks.Config }

var toctouRelease = redis.NewScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0`)

func (l *toctouLock) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	token := l.cfg.NewToken()
	deadline := time.Now().Add(l.cfg.Wait)
	for {
		if err := l.cfg.Hooks.Step(ctx, "try"); err != nil {
			return nil, err
		}
		err := l.cfg.Nodes[0].Get(ctx, key).Err()
		switch {
		case errors.Is(err, redis.Nil):
			// Free: take it, after the gap in which another client
			// can find it free too.
			time.Sleep(5 * time.Millisecond)
			if err := l.cfg.Hooks.Step(ctx, "set"); err != nil {
				return nil, err
			}
			if err := l.cfg.Nodes[0].Set(ctx, key, token, l.cfg.TTL).Err(); err != nil {
				return nil, err
			}
			return &locks.Lease{Key: key, Token: token, TTL: l.cfg.TTL}, nil
		case err != nil:
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, locks.ErrNotAcquired
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (l *toctouLock) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	if err := l.cfg.Hooks.Step(ctx, "free"); err != nil {
		return false, err
	}
	n, err := toctouRelease.Run(ctx, l.cfg.Nodes[0], []string{lease.Key}, lease.Token).Int64()
	return n > 0, err
}

// A lock whose points are named otherwise still gets its double holders
// classed within the lease on a fault-free run: the lease start comes from
// the send of its winning attempt, even after a wait longer than the ttl.
func TestOutsideLockClassedFromTheWire(t *testing.T) {
	needRedis(t)
	reg := locks.Builtin()
	if err := reg.Register(locks.Entry{Name: "toctou", Summary: "GET then SET", New: func(cfg locks.Config) (locks.Lock, error) {
		cfg.Wait = 2 * time.Second
		return &toctouLock{cfg: cfg}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	opts := short("toctou", 1)
	opts.Registries.Locks, opts.Clients, opts.TTL, opts.HoldMin, opts.HoldMax = reg, 8, 200*time.Millisecond, 100*time.Millisecond, 180*time.Millisecond
	res := run(t, opts)
	if res.Report.Count[checker.KindDoubleHolder] == 0 {
		t.Fatalf("no double holder from a GET-then-SET lock: %v", res.Report.Count)
	}
	for _, a := range res.Report.Anomalies {
		if a.Kind == checker.KindDoubleHolder && a.Class != checker.ClassWithinLease {
			t.Errorf("fault-free double holder classed %s: %s", a.Class, a.Detail)
		}
	}
}
