package libs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/locktorture/locktorture/locks"
)

// redsyncLock adapts github.com/go-redsync/redsync/v4, the most used Go
// Redlock. With one pool it is a single-node lock and is expected to fail
// like `token`: work or a pause longer than the TTL gives two holders (no
// foreign release). With one pool per master it is Redlock and is expected
// to fail like `redlock`: a master that restarts empty while the lease runs.
//
// What the library does: its value (which this adapter has it take from
// Config.NewToken through WithGenValueFunc, so that Lease.Token is the value
// in Redis) is SET NX PX on every pool in parallel, each attempt under a
// timeout of 5% of the expiry; it succeeds with a quorum (pools/2+1) and a
// validity of expiry - elapsed - 1% drift (Lease.Validity), and otherwise
// deletes what it set and retries after its delay function, up to a number
// of tries. Here the delay is the harness's pacing and the tries are what
// fit in Config.Wait. Release is a compare-and-delete on every pool,
// counted successful with a quorum.
type redsyncLock struct {
	name  string
	cfg   locks.Config
	rs    *redsync.Redsync
	pools int
}

func newRedsync(name string, nodes int) locks.Factory {
	return func(cfg locks.Config) (locks.Lock, error) {
		if len(cfg.Nodes) < nodes {
			return nil, fmt.Errorf("lock %s needs %d redis node(s), got %d", name, nodes, len(cfg.Nodes))
		}
		if err := checkConfig(name, cfg); err != nil {
			return nil, err
		}
		pools := make([]redsyncredis.Pool, nodes)
		for i := range pools {
			pools[i] = goredis.NewPool(cfg.Nodes[i])
		}
		return &redsyncLock{name: name, cfg: cfg, rs: redsync.New(pools...), pools: nodes}, nil
	}
}

// checkConfig refuses a config no adapter can work with.
func checkConfig(name string, cfg locks.Config) error {
	switch {
	case cfg.TTL <= 0:
		return fmt.Errorf("lock %s needs a positive ttl", name)
	case cfg.Wait < 0 || cfg.RetryDelay < 0:
		return fmt.Errorf("lock %s: negative wait or retry delay", name)
	case cfg.Rand == nil || cfg.NewToken == nil:
		return fmt.Errorf("lock %s: config needs Rand and NewToken", name)
	}
	return nil
}

func (l *redsyncLock) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	if err := l.cfg.Hooks.Reach(ctx, "attempt"); err != nil {
		return nil, err
	}
	m := l.rs.NewMutex(key,
		redsync.WithExpiry(l.cfg.TTL),
		redsync.WithTries(l.cfg.Attempts()),
		redsync.WithRetryDelayFunc(func(tries int) time.Duration { return l.cfg.RetryDelayAt(max(tries, 1)) }),
		redsync.WithGenValueFunc(func() (string, error) { return l.cfg.NewToken(), nil }),
	)
	err := m.LockContext(ctx)
	var taken *redsync.ErrTaken
	switch {
	case err == nil:
	case errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken):
		// Every attempt was refused (or the wait ended between attempts)
		// and what an attempt set was deleted again.
		return nil, fmt.Errorf("%s %s: %w: %v", l.name, key, locks.ErrNotAcquired, err)
	default:
		return nil, fmt.Errorf("%s %s: %w", l.name, key, err)
	}
	lease := &locks.Lease{Key: key, Token: m.Value(), TTL: l.cfg.TTL, Handle: m}
	if v := time.Until(m.Until()); v > 0 {
		lease.Validity = v // what the library promises; a careful holder stops within it
	}
	return lease, nil
}

func (l *redsyncLock) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	m, ok := lease.Handle.(*redsync.Mutex)
	if !ok {
		return false, fmt.Errorf("%s: release of a lease it did not hand out", l.name)
	}
	if err := l.cfg.Hooks.Reach(ctx, "release"); err != nil {
		return false, err
	}
	deleted, err := m.UnlockContext(ctx)
	if deleted || err == nil {
		return deleted, nil
	}
	// Below a quorum, redsync says false even when some nodes deleted the
	// key, which frees it for the next client before the lease runs out:
	// "deleted nothing" is definite only when every node answered "not
	// ours" or "gone". Anything else (a node deleted it, or gave no
	// answer) leaves the outcome unknown.
	if refusals(err) < l.pools {
		return false, fmt.Errorf("%s release %s: fewer than a quorum of nodes deleted it: %w", l.name, lease.Key, err)
	}
	return false, nil
}

// refusals counts the nodes whose answer to a release was "not ours" or
// "gone" in the error redsync joined from every node's result; a node that
// gave no answer (a *redsync.RedisError) does not count.
func refusals(err error) int {
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
	if err == redsync.ErrLockAlreadyExpired {
		return 1
	}
	return 0
}
