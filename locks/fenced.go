package locks

import (
	"context"
	"fmt"
)

// FenceKey names the counter beside key that hands out key's fencing
// tokens. It lives on the lock's own Redis and never expires.
func FenceKey(key string) string { return key + ":fence" }

// Fenced wraps a lease lock so that every acquisition also carries a
// fencing token: INCR of FenceKey(key), on the same Redis, right after the
// inner lock was taken, returned in Lease.Fence. A resource that remembers
// the highest token it has seen and refuses older ones turns a holder that
// outlived its lease (paused, or working past the TTL) from a second writer
// into a rejected one: the fix Kleppmann proposed for exactly the pauses
// every lease lock suffers from.
//
// It exists to show both sides: the token makes the resource safe under
// pauses and long work although the lock itself still has two holders, and
// the token is only as durable as the counter: on a failover to a replica
// that missed the newest INCRs, tokens go backwards (fence-regression) and
// the resource refuses the legitimate holder instead.
//
// The INCR is a second command after the inner acquire: a holder that
// pauses between the two gets a token newer than the next holder's. The
// resource then still orders the writers, only not in acquire order.
func Fenced(name string, inner Factory) Factory {
	return func(cfg Config) (Lock, error) {
		if err := cfg.check(name, 1); err != nil {
			return nil, err
		}
		in, err := inner(cfg)
		if err != nil {
			return nil, err
		}
		return &fencedLock{cfg: cfg, inner: in}, nil
	}
}

type fencedLock struct {
	cfg   Config
	inner Lock
}

func (l *fencedLock) Acquire(ctx context.Context, key string) (*Lease, error) {
	lease, err := l.inner.Acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	if err := l.cfg.Hooks.step(ctx, "fence"); err != nil {
		return nil, err
	}
	n, err := l.cfg.Nodes[0].Incr(ctx, FenceKey(key)).Result()
	if err != nil {
		// A lock without its token must not be used; give it back. A
		// crashed process gives nothing back.
		if l.cfg.Hooks.step(ctx, "fence-failed") == nil {
			_, _ = l.inner.Release(context.WithoutCancel(ctx), lease)
		}
		lease.StopRenewal()
		return nil, fmt.Errorf("take fencing token for %s: %w", key, err)
	}
	lease.Fence = n
	return lease, nil
}

func (l *fencedLock) Release(ctx context.Context, lease *Lease) (bool, error) {
	return l.inner.Release(ctx, lease)
}
