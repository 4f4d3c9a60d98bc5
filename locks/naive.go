package locks

import (
	"context"
	"time"
)

// setnxLock is the seed's first attempt (小试牛刀): SETNX key 1, work, DEL.
// It exists to show the "first confusion" (第一次懵逼): a holder that dies
// before its DEL leaves the key forever, and no one acquires again.
type setnxLock struct {
	cfg Config
	// expire makes it the seed's first fix: PEXPIRE as a second command.
	// The two commands are not atomic, so a crash between them leaves a key
	// without TTL: the same stuck lock, only rarer.
	expire bool
}

func newSetnx(expire bool) Factory {
	return func(cfg Config) (Lock, error) {
		name := "setnx"
		if expire {
			name = "setnx-expire"
		}
		if err := cfg.check(name, 1); err != nil {
			return nil, err
		}
		return &setnxLock{cfg: cfg, expire: expire}, nil
	}
}

func (l *setnxLock) Acquire(ctx context.Context, key string) (*Lease, error) {
	rdb := l.cfg.Nodes[0]
	lease := &Lease{Key: key, Token: l.cfg.NewToken()}
	if l.expire {
		lease.TTL = l.cfg.TTL
	}
	err := retry(ctx, l.cfg, func(ctx context.Context) (bool, error) {
		ok, err := rdb.SetNX(ctx, key, 1, 0).Result()
		if err != nil || !ok || !l.expire {
			return ok, err
		}
		if err := l.cfg.Hooks.step(ctx, "between-setnx-and-pexpire"); err != nil {
			return false, err
		}
		if err := rdb.PExpire(ctx, key, l.cfg.TTL).Err(); err != nil {
			return false, err
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// Release is a plain DEL: it deletes whatever holds the key.
func (l *setnxLock) Release(ctx context.Context, lease *Lease) (bool, error) {
	return plainDel(ctx, l.cfg, lease)
}

func plainDel(ctx context.Context, cfg Config, lease *Lease) (bool, error) {
	if err := cfg.Hooks.step(ctx, "release"); err != nil {
		return false, err
	}
	n, err := cfg.Nodes[0].Del(ctx, lease.Key).Result()
	return n > 0, err
}

// setPXLock is the seed's atomic fix for the first confusion: SET key 1 NX PX
// ttl. A crash no longer sticks the lock, but the value says nothing about who
// set it, so the release is still a plain DEL. It exists to show the "second
// confusion" (第二次懵逼): a holder whose work outlived the TTL (3.5 s of work
// under a 3 s TTL) deletes the lock the next holder took, and a third client
// walks in while the second still works.
type setPXLock struct{ cfg Config }

var newSetPX = leased("set-px", func(cfg Config) Lock { return &setPXLock{cfg: cfg} })

func (l *setPXLock) Acquire(ctx context.Context, key string) (*Lease, error) {
	return acquireNX(ctx, l.cfg, key, "1")
}

func (l *setPXLock) Release(ctx context.Context, lease *Lease) (bool, error) {
	return plainDel(ctx, l.cfg, lease)
}

// acquireNX returns a new lease of key once SET key value NX PX ttl has
// succeeded, retried as cfg says. value is what the key holds: the lease's
// token where it is "", else value as it is (set-px's "1", which says
// nothing about who set the key).
func acquireNX(ctx context.Context, cfg Config, key, value string) (*Lease, error) {
	lease := &Lease{Key: key, Token: cfg.NewToken(), TTL: cfg.TTL}
	if value == "" {
		value = lease.Token
	}
	err := retry(ctx, cfg, func(ctx context.Context) (bool, error) {
		return setNXPX(ctx, cfg, key, value, cfg.TTL)
	})
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// setNXPX is SET key value NX PX ttl: true if this call set the key.
func setNXPX(ctx context.Context, cfg Config, key, value string, ttl time.Duration) (bool, error) {
	return cfg.Nodes[0].SetNX(ctx, key, value, ttl).Result()
}
