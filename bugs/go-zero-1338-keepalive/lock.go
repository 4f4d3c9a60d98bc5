package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/locktorture/locktorture/locks"
)

// lock calls go-zero's RedisLock as its users do: a RedisLock per acquire
// (NewRedisLock, SetExpire in whole seconds), one Acquire per try paced by
// the harness (locks.Retry), Release once. With keepalive the holder calls
// Acquire on the same RedisLock every TTL/3 (locks.StartWatchdog), which
// reports each call as a renewal.
//
// go-zero builds its own go-redis client from an address and takes no
// dialer at v1.3.x; it keeps one client per address for the whole
// process. As a lock program the hello's address is this client's own
// fault proxy (Routes), so dialing it is what the harness's Dial would do.
//
// The key holds the RedisLock's own id (16 random characters made by
// NewRedisLock; the caller cannot set it), not the harness's token: the
// lease is named by Config.NewToken's token, unique per acquisition.
type lock struct {
	cfg       locks.Config
	store     *redis.Redis
	seconds   int
	keepalive bool
}

func newLock(cfg locks.Config, keepalive bool) (locks.Lock, error) {
	if cfg.Routes.Topology != "single" || len(cfg.Routes.Addrs) != 1 {
		return nil, errors.New("go-zero dials the master itself: topology single")
	}
	if cfg.TTL < time.Second || cfg.TTL%time.Second != 0 {
		return nil, fmt.Errorf("go-zero's RedisLock sets its TTL in whole seconds (SetExpire): --ttl %v cannot be expressed", cfg.TTL)
	}
	return &lock{cfg: cfg, store: redis.New(cfg.Routes.Addrs[0]), seconds: int(cfg.TTL / time.Second), keepalive: keepalive}, nil
}

func (l *lock) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	token := l.cfg.NewToken()
	rl := redis.NewRedisLock(l.store, key)
	rl.SetExpire(l.seconds)
	err := locks.Retry(ctx, l.cfg, func(context.Context) (bool, error) { return rl.Acquire() })
	if err != nil {
		return nil, err
	}
	lease := &locks.Lease{Key: key, Token: token, TTL: l.cfg.TTL, Handle: rl}
	if l.keepalive {
		locks.StartWatchdog(ctx, l.cfg, lease, func(context.Context) (bool, error) { return rl.Acquire() })
	}
	return lease, nil
}

func (l *lock) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	lease.StopRenewal()
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
