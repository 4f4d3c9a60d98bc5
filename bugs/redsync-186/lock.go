package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/locktorture/locktorture/locks"
)

// lock calls redsync as its users do: a Mutex per acquire over one pool
// per master, each pool the goredis/v9 pool redsync ships over the
// harness's go-redis v9 client for that master (cfg.Nodes, which reach it
// through the client's fault proxies). The value it writes is the
// harness's token (WithGenValueFunc), so GET key == token on every master;
// each try is one SET NX PX on every pool (WithTries(1)), paced by the
// harness (locks.Retry). A try that wins a quorum returns at once: the
// masters it did not win are left as they are, which is what #186 is about.
type lock struct {
	cfg   locks.Config
	rs    *redsync.Redsync
	pools int
}

func newLock(cfg locks.Config) (locks.Lock, error) {
	if len(cfg.Nodes) == 0 {
		return nil, errors.New("redsync needs a go-redis client per master: topology single or redlock")
	}
	pools := make([]rsredis.Pool, len(cfg.Nodes))
	for i, n := range cfg.Nodes {
		pools[i] = goredis.NewPool(n)
	}
	return &lock{cfg: cfg, rs: redsync.New(pools...), pools: len(pools)}, nil
}

func (l *lock) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	token := l.cfg.NewToken()
	m := l.rs.NewMutex(key, redsync.WithExpiry(l.cfg.TTL), redsync.WithTries(1),
		redsync.WithGenValueFunc(func() (string, error) { return token, nil }))
	var last error
	err := locks.Retry(ctx, l.cfg, func(ctx context.Context) (bool, error) {
		// A try that won no quorum deletes what it set on every node
		// before it returns; the next one comes after the harness's
		// pause, as redsync's own tries do after its delay.
		last = m.LockContext(ctx)
		return last == nil, nil
	})
	var taken *redsync.ErrTaken
	switch {
	case err == nil:
	case errors.Is(err, locks.ErrNotAcquired) && last != nil &&
		!errors.Is(last, redsync.ErrFailed) && !errors.As(last, &taken):
		// As redsync's LockContext reports it: the last try's error,
		// a node that gave no answer; what it holds is not known.
		return nil, fmt.Errorf("redsync %s: %w", key, last)
	default:
		return nil, err
	}
	return &locks.Lease{Key: key, Token: token, TTL: l.cfg.TTL, Handle: m}, nil
}

func (l *lock) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	m, ok := lease.Handle.(*redsync.Mutex)
	if !ok {
		return false, errors.New("redsync: release of a lease it did not hand out")
	}
	if err := l.cfg.Hooks.Reach(ctx, "release"); err != nil {
		return false, err
	}
	deleted, err := m.UnlockContext(ctx)
	if deleted || err == nil {
		return deleted, nil
	}
	// Below a quorum redsync says false even when some nodes deleted the
	// key: "deleted nothing" is definite only when every node answered
	// "not ours" or "gone".
	if refusals(err) < l.pools {
		return false, fmt.Errorf("redsync release %s: %w", lease.Key, err)
	}
	return false, nil
}

// refusals counts the nodes whose answer was "not ours" or "gone" in the
// error redsync joined from every node's result (errors.Join at v4.18); a
// node that gave no answer (a *redsync.RedisError) does not count.
func refusals(err error) int {
	var taken *redsync.ErrTaken
	switch e := err.(type) {
	case nil, *redsync.RedisError:
		return 0
	case *redsync.ErrNodeTaken:
		return 1
	case interface{ Unwrap() []error }:
		n := 0
		for _, x := range e.Unwrap() {
			n += refusals(x)
		}
		return n
	}
	switch {
	case errors.As(err, &taken):
		return len(taken.Nodes)
	case errors.Is(err, redsync.ErrLockAlreadyExpired):
		return 1
	}
	return 0
}
