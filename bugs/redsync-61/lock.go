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

// lock calls redsync as its users do: a Mutex per acquire, on one pool
// over a go-redis v8 client (v4.0.x ships no go-redis v9 pool) dialled to
// the master through the client's fault proxies. The value it writes is
// the harness's token (WithGenValueFunc), so GET key == token; each try is
// one SET NX PX (WithTries(1)) paced by the harness (locks.Retry).
type lock struct {
	cfg      locks.Config
	client   *goredislib.Client
	rs       *redsync.Redsync
	watchdog bool
}

func newLock(cfg locks.Config, watchdog bool) (locks.Lock, error) {
	if len(cfg.Addrs) == 0 || cfg.Dial == nil {
		return nil, errors.New("redsync dials the master itself: topology single")
	}
	opt := &goredislib.Options{Addr: cfg.Addrs[0], Dialer: cfg.Dial}
	if cfg.CommandTimeout > 0 {
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = cfg.CommandTimeout, cfg.CommandTimeout, cfg.CommandTimeout
	}
	client := goredislib.NewClient(opt)
	return &lock{cfg: cfg, client: client, rs: redsync.New(goredis.NewPool(client)), watchdog: watchdog}, nil
}

// Close closes the lock's client when its process ends.
func (l *lock) Close() error { return l.client.Close() }

func (l *lock) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	token := l.cfg.NewToken()
	m := l.rs.NewMutex(key, redsync.WithExpiry(l.cfg.TTL), redsync.WithTries(1),
		redsync.WithGenValueFunc(func() (string, error) { return token, nil }))
	err := locks.Retry(ctx, l.cfg, func(ctx context.Context) (bool, error) {
		err := m.LockContext(ctx)
		if errors.Is(err, redsync.ErrFailed) {
			return false, nil // taken: try again after the harness's pause
		}
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	lease := &locks.Lease{Key: key, Token: token, TTL: l.cfg.TTL, Handle: m}
	if l.watchdog {
		locks.StartWatchdog(ctx, l.cfg, lease, m.ExtendContext)
	}
	return lease, nil
}

func (l *lock) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	lease.StopRenewal()
	m, ok := lease.Handle.(*redsync.Mutex)
	if !ok {
		return false, errors.New("redsync: release of a lease it did not hand out")
	}
	if err := l.cfg.Hooks.Reach(ctx, "release"); err != nil {
		return false, err
	}
	deleted, err := m.UnlockContext(ctx)
	if err != nil && !deleted {
		return false, fmt.Errorf("redsync release %s: %w", lease.Key, err)
	}
	return deleted, nil
}
