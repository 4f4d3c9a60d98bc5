package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/bsm/redislock"

	"github.com/locktorture/locktorture/locks"
)

// lock calls bsm/redislock as its users do: Obtain with the harness's
// token (Options.Token, so GET key == token) over the client's go-redis v9
// client (Nodes[0], through its fault proxies, with go-redis's own retry of
// a failed command), Release once. Each try is one Obtain (NoRetry), paced
// by the harness (locks.Retry), so that each SET NX follows a step.
type lock struct {
	cfg    locks.Config
	client *redislock.Client
}

func newLock(cfg locks.Config) (locks.Lock, error) {
	if len(cfg.Nodes) < 1 {
		return nil, errors.New("redislock needs 1 redis node, got 0")
	}
	return &lock{cfg: cfg, client: redislock.New(cfg.Nodes[0])}, nil
}

func (l *lock) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	opt := &redislock.Options{Token: l.cfg.NewToken(), RetryStrategy: redislock.NoRetry()}
	var lk *redislock.Lock
	err := locks.Retry(ctx, l.cfg, func(ctx context.Context) (bool, error) {
		var err error
		lk, err = l.client.Obtain(ctx, key, l.cfg.TTL, opt)
		if errors.Is(err, redislock.ErrNotObtained) {
			return false, nil // taken: try again after the harness's pause
		}
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	return &locks.Lease{Key: key, Token: lk.Token(), TTL: l.cfg.TTL, Handle: lk}, nil
}

func (l *lock) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	lk, ok := lease.Handle.(*redislock.Lock)
	if !ok {
		return false, errors.New("redislock: release of a lease it did not hand out")
	}
	if err := l.cfg.Hooks.Reach(ctx, "release"); err != nil {
		return false, err
	}
	switch err := lk.Release(ctx); {
	case err == nil:
		return true, nil
	case errors.Is(err, redislock.ErrLockNotHeld):
		return false, nil
	default:
		return false, fmt.Errorf("redislock release %s: %w", lease.Key, err)
	}
}
