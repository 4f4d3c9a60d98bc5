package libs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/locktorture/locktorture/locks"
)

// redislockLock adapts github.com/bsm/redislock, a small single-node lock.
// It is expected to fail like `token`: work or a pause longer than the TTL
// leaves two clients acting as holders (no foreign release, thanks to its
// compare-and-delete).
//
// What the library does: a token (here Config.NewToken's, through
// Options.Token, so that Lease.Token is the value in Redis) is written by a
// Lua script that sets the key with PX when it is free (or already holds
// this token); it retries by its RetryStrategy (here the harness's pacing,
// limited to the tries that fit in Config.Wait) under the context's
// deadline (its default is the TTL when there is none). Release is a
// compare-and-delete script that answers ErrLockNotHeld when the key was
// gone or someone else's.
type redislockLock struct {
	cfg    locks.Config
	client *redislock.Client
}

func newRedislock(cfg locks.Config) (locks.Lock, error) {
	if len(cfg.Nodes) < 1 {
		return nil, errors.New("lock redislock needs 1 redis node, got 0")
	}
	if err := checkConfig("redislock", cfg); err != nil {
		return nil, err
	}
	return &redislockLock{cfg: cfg, client: redislock.New(cfg.Nodes[0])}, nil
}

// pacing is redislock's RetryStrategy with the harness's retry delays.
type pacing struct {
	cfg  locks.Config
	left int
	n    int // failed attempts so far
}

func (p *pacing) NextBackoff() time.Duration {
	if p.left <= 0 {
		return 0 // no retry left: redislock answers ErrNotObtained
	}
	p.left--
	p.n++
	return p.cfg.RetryDelayAt(p.n)
}

func (l *redislockLock) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	if err := l.cfg.Hooks.Reach(ctx, "attempt"); err != nil {
		return nil, err
	}
	// The library stops retrying at the context's deadline; the tries
	// bound the wait, and this deadline is only a backstop well past it.
	ctx, cancel := context.WithTimeout(ctx, 2*l.cfg.Wait+l.cfg.TTL)
	defer cancel()
	opts := &redislock.Options{Token: l.cfg.NewToken(), RetryStrategy: &pacing{cfg: l.cfg, left: l.cfg.Attempts() - 1}}
	lk, err := l.client.Obtain(ctx, key, l.cfg.TTL, opts)
	switch {
	case err == nil:
		return &locks.Lease{Key: key, Token: lk.Token(), TTL: l.cfg.TTL, Handle: lk}, nil
	case errors.Is(err, redislock.ErrNotObtained):
		return nil, fmt.Errorf("redislock %s: %w", key, locks.ErrNotAcquired)
	}
	return nil, fmt.Errorf("redislock %s: %w", key, err)
}

func (l *redislockLock) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
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
