package locks

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// compareAndDelete deletes the key only if it still holds our token: the
// seed's fix for the second confusion, one atomic script instead of GET+DEL.
var compareAndDelete = redis.NewScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0`)

// compareAndExpire extends the key only if it still holds our token: the
// watchdog's renewal.
var compareAndExpire = redis.NewScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0`)

// setOrExtend takes the key when it is free and extends it when it is already
// ours: the seed's "lock timeout" step (优化二：锁超时) replaces SET NX with it so
// that a retry after a late reply can take back a key this client already set.
var setOrExtend = redis.NewScript(`
local v = redis.call('get', KEYS[1])
if v == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
if not v then
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0`)

// tokenLock is the seed's production-ready version after the second confusion:
// SET key <random token> NX PX ttl, released by a compare-and-delete script,
// so a late holder can no longer delete the next holder's key. It exists to
// show what a token does not fix: work or a pause longer than the TTL still
// leaves two clients acting as holders at once (with no foreign release), and
// an acquire whose reply arrives after the TTL is taken as a success.
type tokenLock struct{ cfg Config }

var newToken = leased("token", func(cfg Config) Lock { return &tokenLock{cfg: cfg} })

func (l *tokenLock) Acquire(ctx context.Context, key string) (*Lease, error) {
	return acquireNX(ctx, l.cfg, key, "")
}

func (l *tokenLock) Release(ctx context.Context, lease *Lease) (bool, error) {
	return releaseToken(ctx, l.cfg, lease)
}

func releaseToken(ctx context.Context, cfg Config, lease *Lease) (bool, error) {
	lease.StopRenewal()
	if err := cfg.Hooks.step(ctx, "release"); err != nil {
		return false, err
	}
	n, err := compareAndDelete.Run(ctx, cfg.Nodes[0], []string{lease.Key}, lease.Token).Int64()
	return n > 0, err
}

// tokenValidityLock is the seed's "lock timeout" step (优化二：锁超时): an
// acquire counts only if it took less than the TTL (a 2.5 s acquire under a 2 s
// TTL may come back after the key already expired), and because a late reply
// may still have set the key, retries use set-or-extend-if-mine instead of SET
// NX. It exists to show that measuring the acquire refuses a lease that
// arrived too late, while a pause after acquiring still breaks it.
type tokenValidityLock struct{ cfg Config }

var newTokenValidity = leased("token-validity", func(cfg Config) Lock { return &tokenValidityLock{cfg: cfg} })

func (l *tokenValidityLock) Acquire(ctx context.Context, key string) (*Lease, error) {
	lease := &Lease{Key: key, Token: l.cfg.NewToken(), TTL: l.cfg.TTL}
	// firstWrite and lastWrite are when the attempts that wrote our key
	// (too late) were sent.
	var firstWrite, lastWrite time.Time
	err := retry(ctx, l.cfg, func(ctx context.Context) (bool, error) {
		start := time.Now()
		n, err := setOrExtend.Run(ctx, l.cfg.Nodes[0], []string{key}, lease.Token, l.cfg.TTL.Milliseconds()).Int64()
		if err != nil || n == 0 {
			return false, err
		}
		elapsed := time.Since(start)
		if elapsed >= l.cfg.TTL {
			// The key may already have expired: try again.
			if firstWrite.IsZero() {
				firstWrite = start
			}
			lastWrite = start
			return false, nil
		}
		lease.Validity = l.cfg.TTL - elapsed
		return true, nil
	})
	if errors.Is(err, ErrNotAcquired) && !firstWrite.IsZero() {
		// A late success may have left our key behind; do not orphan it.
		// Until it is gone, the key was ours although we refuse the lease.
		_, derr := compareAndDelete.Run(context.WithoutCancel(ctx), l.cfg.Nodes[0], []string{key}, lease.Token).Result()
		gone := time.Now()
		if derr != nil {
			gone = lastWrite.Add(l.cfg.TTL)
		}
		return nil, &RefusedError{HeldFrom: firstWrite, HeldTo: gone, Reason: "the lease came back after its ttl"}
	}
	if err != nil {
		return nil, err
	}
	return lease, nil
}

func (l *tokenValidityLock) Release(ctx context.Context, lease *Lease) (bool, error) {
	return releaseToken(ctx, l.cfg, lease)
}

// watchdogLock is the token lock with a background renewal every ttl/3 by
// compare-and-PEXPIRE, stopping once the key is no longer ours: the seed's
// answer to work longer than the TTL (定时刷新) and Redisson's watchdog. It
// exists to show that renewal survives long work but not a stop-the-world
// pause (the watchdog stops with its process) nor a holder cut off from Redis
// whose work goes on while its key expires.
type watchdogLock struct{ cfg Config }

var newWatchdog = leased("watchdog", func(cfg Config) Lock { return &watchdogLock{cfg: cfg} })

func (l *watchdogLock) Acquire(ctx context.Context, key string) (*Lease, error) {
	lease, err := acquireNX(ctx, l.cfg, key, "")
	if err != nil {
		return nil, err
	}
	startWatchdog(ctx, l.cfg, lease, func(ctx context.Context) (bool, error) {
		n, err := compareAndExpire.Run(ctx, l.cfg.Nodes[0], []string{key}, lease.Token, l.cfg.TTL.Milliseconds()).Int64()
		return n > 0, err
	})
	return lease, nil
}

func (l *watchdogLock) Release(ctx context.Context, lease *Lease) (bool, error) {
	return releaseToken(ctx, l.cfg, lease)
}

// startWatchdog renews lease every TTL/3 until it is stopped, the renewal
// reports the key is no longer ours, or ctx ends. A failed renewal (timeout,
// reset) is retried at the next tick: the key may still be ours.
func startWatchdog(ctx context.Context, cfg Config, lease *Lease, renew func(context.Context) (bool, error)) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var once sync.Once
	done := make(chan struct{})
	lease.stop = func() {
		once.Do(cancel)
		<-done
	}
	go func() {
		defer close(done)
		t := time.NewTicker(cfg.TTL / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if cfg.Hooks.step(ctx, "watchdog") != nil {
				return
			}
			finish := cfg.Hooks.renew(lease)
			ok, err := renew(ctx)
			if ctx.Err() != nil && err != nil {
				finish(err)
				return
			}
			switch {
			case err != nil:
				finish(err)
			case !ok:
				finish(ErrNotAcquired)
				return
			default:
				finish(nil)
			}
		}
	}()
}

func builtins() []Entry {
	return []Entry{
		{Name: "setnx", Summary: "SETNX key 1, plain DEL; no TTL: a holder that dies never releases (stuck lock)", New: newSetnx(false)},
		{Name: "setnx-expire", Summary: "SETNX then PEXPIRE as a second command: a crash between the two leaves a key without TTL", New: newSetnx(true)},
		{Name: "set-px", Summary: "SET key 1 NX PX ttl, plain DEL: work longer than the TTL deletes the next holder's lock", New: newSetPX},
		{Name: "token", Summary: "SET key token NX PX ttl, compare-and-delete: work or a pause longer than the TTL gives two holders", New: newToken},
		{Name: "token-validity", Summary: "set-or-extend-if-mine, counts only if the acquire took less than the TTL: refuses late leases", New: newTokenValidity},
		{Name: "watchdog", Summary: "token lock renewed every ttl/3 while held: survives long work, not a pause or a partition", New: newWatchdog},
		{Name: "redlock", Summary: "Redlock on N masters: majority + validity, release everywhere; survives a minority down, not a node restarting empty or a clock jump", Nodes: RedlockNodes, New: newRedlock(false)},
		{Name: "redlock-watchdog", Summary: "Redlock extended on a majority every ttl/3 within the validity: survives long work, not a restart-empty node or a pause", Nodes: RedlockNodes, New: newRedlock(true)},
		{Name: "token-wait", Summary: "token lock + WAIT 1 (Redisson): refuses a lock no replica acknowledged; a failover to another replica still loses it", New: newTokenWait},
		{Name: "reentrant", Summary: "Redisson RLock: hash owner->count, nested acquires count, release at zero DELs and PUBLISHes, watchdog: a retried script counts twice", New: newReentrant},
		{Name: "reentrant-blpop", Summary: "seed 003: owner+count hash, waiters BLPOP a list the last release pushes to: an expiry notifies nobody", New: newReentrantBLPOP},
		{Name: "fenced", Summary: "token lock + INCR fencing token for the resource to check: pauses no longer write; a lossy failover sends tokens back", New: Fenced("fenced", newToken)},
		{Name: "fenced:watchdog", Summary: "watchdog lock + INCR fencing token", New: Fenced("fenced:watchdog", newWatchdog)},
	}
}
