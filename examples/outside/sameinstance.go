package main

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/locks"
)

// sameInstance is a lock with the shared-instance behaviour of go-zero's
// RedisLock: each lock object writes one value of its own, fixed when it
// is made, and an acquire that finds that value already in the key takes
// the lock again (refreshing its TTL). Each goroutine with its own object
// is safe; an object shared by goroutines (--share 2) lets the second
// acquire succeed while the first holds, within the lease: double-holder
// with no fault at all.
var sameInstance = locks.Entry{Name: "same-instance",
	Summary: "outside example: one value per lock object; an acquire finding its own value takes it again (shared by threads under --share: two holders)",
	New:     newSameInstance}

// reacquire sets the key to the object's value when it is free, or
// refreshes it when it already holds that value.
var reacquire = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	redis.call("PEXPIRE", KEYS[1], ARGV[2])
	return 1
end
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return 1
end
return 0`)

type instanceLock struct {
	cfg   locks.Config
	value string // the object's own value, for every acquire it makes
}

func newSameInstance(cfg locks.Config) (locks.Lock, error) {
	if len(cfg.Nodes) == 0 || cfg.TTL <= 0 {
		return nil, errors.New("same-instance needs a redis node and a positive ttl")
	}
	return &instanceLock{cfg: cfg, value: "object-" + cfg.NewToken()}, nil
}

// Acquire implements locks.Lock. The lease's token is the harness's, unique
// per acquisition; the key holds the object's value.
func (l *instanceLock) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	lease := &locks.Lease{Key: key, Token: l.cfg.NewToken(), TTL: l.cfg.TTL}
	err := locks.Retry(ctx, l.cfg, func(ctx context.Context) (bool, error) {
		got, err := reacquire.Run(ctx, l.cfg.Nodes[0], []string{key}, l.value, l.cfg.TTL.Milliseconds()).Int()
		return got == 1, err
	})
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// Release implements locks.Lock: it deletes the key if it holds the
// object's value, whichever goroutine's acquire wrote it.
func (l *instanceLock) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	if err := l.cfg.Hooks.Reach(ctx, "release"); err != nil {
		return false, err
	}
	n, err := release.Run(ctx, l.cfg.Nodes[0], []string{lease.Key}, l.value).Int()
	return n == 1, err
}
