package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/locktorture/locktorture/locks"
)

// lock calls go-zero's RedisLock as an application that shares one lock
// object per key among its goroutines does: a RedisLock per key, made
// (NewRedisLock, SetExpire in whole seconds) on the key's first acquire
// and kept for the process. Every client the process serves (--share K:
// each calls on a goroutine of its own) acquires and releases that same
// RedisLock: one Acquire per try paced by the harness (locks.Retry),
// Release once.
//
// go-zero builds its own go-redis client from an address and takes no
// dialer at v1.3.x; it keeps one client per address for the whole
// process. As a lock program the hello's address is the group's own fault
// proxy (Routes), so dialing it is what the harness's Dial would do.
//
// The key holds the RedisLock's id (16 random characters made by
// NewRedisLock; the caller cannot set it), the same for every goroutine
// that shares it, not the harness's token: a lease is named by
// Config.NewToken's token, unique per acquisition.
type lock struct {
	cfg     locks.Config
	store   *redis.Redis
	seconds int

	mu   sync.Mutex
	keys map[string]*redis.RedisLock
}

func newLock(cfg locks.Config) (locks.Lock, error) {
	if cfg.Routes.Topology != "single" || len(cfg.Routes.Addrs) != 1 {
		return nil, errors.New("go-zero dials the master itself: topology single")
	}
	if cfg.TTL < time.Second || cfg.TTL%time.Second != 0 {
		return nil, fmt.Errorf("go-zero's RedisLock sets its TTL in whole seconds (SetExpire): --ttl %v cannot be expressed", cfg.TTL)
	}
	return &lock{cfg: cfg, store: redis.New(cfg.Routes.Addrs[0]), seconds: int(cfg.TTL / time.Second),
		keys: map[string]*redis.RedisLock{}}, nil
}

// of is the process's RedisLock for key, made on first use.
func (l *lock) of(key string) *redis.RedisLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	rl := l.keys[key]
	if rl == nil {
		rl = redis.NewRedisLock(l.store, key)
		rl.SetExpire(l.seconds)
		l.keys[key] = rl
	}
	return rl
}

func (l *lock) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	token := l.cfg.NewToken()
	rl := l.of(key)
	err := locks.Retry(ctx, l.cfg, func(context.Context) (bool, error) { return rl.Acquire() })
	if err != nil {
		return nil, err
	}
	return &locks.Lease{Key: key, Token: token, TTL: l.cfg.TTL, Handle: rl}, nil
}

func (l *lock) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	rl, ok := lease.Handle.(*redis.RedisLock)
	if !ok {
		return false, errors.New("go-zero: release of a lease it did not hand out")
	}
	if err := l.cfg.Hooks.Reach(ctx, "release"); err != nil {
		return false, err
	}
	deleted, err := rl.Release()
	if err != nil {
		return false, fmt.Errorf("go-zero release %s: %w", lease.Key, err)
	}
	return deleted, nil
}
