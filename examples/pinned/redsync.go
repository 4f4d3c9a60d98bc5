package main

import (
	"context"
	"errors"
	"fmt"

	goredislib "github.com/go-redis/redis/v8"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v8"

	"github.com/locktorture/locktorture/locks"
)

// redsyncLock calls redsync v4.0.3 as its users do. That version ships
// pools for go-redis v7 and v8 only, so the lock dials its own go-redis v8
// client to the master through the harness's dialer (the client's fault
// proxies), which is why it runs where the master's address is known:
// topologies single and redlock.
type redsyncLock struct {
	cfg    locks.Config
	client *goredislib.Client
	rs     *redsync.Redsync
}

func newRedsync(cfg locks.Config) (locks.Lock, error) {
	if len(cfg.Addrs) == 0 || cfg.Dial == nil {
		return nil, errors.New("lock redsync-v4.0.3 dials the master itself: it runs on topology single or redlock")
	}
	if cfg.TTL <= 0 || cfg.NewToken == nil || cfg.Rand == nil {
		return nil, errors.New("lock redsync-v4.0.3 needs a positive ttl, Rand and NewToken")
	}
	opt := &goredislib.Options{Addr: cfg.Addrs[0], Dialer: cfg.Dial}
	if cfg.CommandTimeout > 0 {
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = cfg.CommandTimeout, cfg.CommandTimeout, cfg.CommandTimeout
	}
	client := goredislib.NewClient(opt)
	return &redsyncLock{cfg: cfg, client: client, rs: redsync.New(goredis.NewPool(client))}, nil
}

// Close closes the lock's own client when its process ends.
func (l *redsyncLock) Close() error { return l.client.Close() }

func (l *redsyncLock) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	token := l.cfg.NewToken()
	m := l.rs.NewMutex(key, redsync.WithExpiry(l.cfg.TTL), redsync.WithTries(1),
		redsync.WithGenValueFunc(func() (string, error) { return token, nil }))
	err := locks.Retry(ctx, l.cfg, func(ctx context.Context) (bool, error) {
		err := m.LockContext(ctx)
		if errors.Is(err, redsync.ErrFailed) {
			return false, nil // held by another: try again after the pause
		}
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	return &locks.Lease{Key: key, Token: token, TTL: l.cfg.TTL, Handle: m}, nil
}

func (l *redsyncLock) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	m, ok := lease.Handle.(*redsync.Mutex)
	if !ok {
		return false, errors.New("redsync-v4.0.3: release of a lease it did not hand out")
	}
	if err := l.cfg.Hooks.Reach(ctx, "release"); err != nil {
		return false, err
	}
	deleted, err := m.UnlockContext(ctx)
	if err != nil && !deleted {
		return false, fmt.Errorf("redsync-v4.0.3 release %s: %w", lease.Key, err)
	}
	return deleted, nil
}
