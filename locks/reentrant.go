package locks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locktorture/locktorture/history"

	"github.com/redis/go-redis/v9"
)

// CountReleaser is implemented by the reentrant locks: ReleaseCount releases
// like Release and reports the owner's hold count the lock's key showed
// right after: 0 when the release deleted the key, more when the owner still
// holds it (a nested release, or an increment that counted twice), -1 when
// the key no longer held this owner at all (it expired or changed hands).
// The count is what lets a checker see a retried increment or decrement.
type CountReleaser interface {
	ReleaseCount(ctx context.Context, lease *Lease) (left int64, err error)
}

// A reentrant lease's Token is "<owner>#<n>/<depth>": the owner is the Lock
// instance (the client process, the field in the lock's hash), n numbers the
// owner's acquisitions so that the history can tell a nested acquisition
// from the outer one, and depth is the hold count the lock's script reported
// when it handed the lease out (1 for an outer acquire, 2 for the first
// nested one, ...). An acquire whose outcome is unknown is recorded under
// the bare owner (the harness records the last token a lock asked for, and
// these locks ask for one token only, their owner id).
func reentrantToken(owner string, n int, depth int64) string {
	return history.ReentrantLease(owner, int64(n), depth)
}

// reentrantScripts is one layout of the owner/count hash and its way of
// waking waiters.
type reentrantScripts struct {
	// acquire returns {1, count} when the owner now holds the key with
	// that count, {0, pttl} when another owner holds it.
	acquire *redis.Script
	// release returns the owner's count left (0: deleted and waiters
	// notified), or -1 when the key does not hold the owner.
	release *redis.Script
	// renew extends the key if it still holds the owner: 1, else 0.
	renew *redis.Script
}

// Redisson's RLock layout (seed 001): the hash maps owner -> count; an
// acquire takes a missing key or increments its own field; the release
// decrements, and at zero deletes the key and PUBLISHes on the key's
// channel so that waiters retry at once instead of polling.
var rlockScripts = reentrantScripts{
	acquire: redis.NewScript(`
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  local n = redis.call('hincrby', KEYS[1], ARGV[1], 1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {1, n}
end
return {0, redis.call('pttl', KEYS[1])}`),
	release: redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return -1
end
local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if n > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return n
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], 'unlocked')
return 0`),
	renew: redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0`),
}

// Seed 003's layout: the hash has an owner field and a count field; the
// release that ends the hold deletes the key and, when the notification
// list is empty, pushes one element to it for a BLPOP-ing waiter. A key
// that expires instead of being released pushes nothing (the seed's "假性死
// 锁"), and a waiter that pops the element but loses the race for the key
// consumes it: both leave the other waiters blocked until their BLPOP times
// out, which is why the wait is bounded.
var blpopScripts = reentrantScripts{
	acquire: redis.NewScript(`
local o = redis.call('hget', KEYS[1], 'owner')
if o and o ~= ARGV[1] then
  return {0, redis.call('pttl', KEYS[1])}
end
redis.call('hset', KEYS[1], 'owner', ARGV[1])
local n = redis.call('hincrby', KEYS[1], 'count', 1)
redis.call('pexpire', KEYS[1], ARGV[2])
return {1, n}`),
	release: redis.NewScript(`
if redis.call('hget', KEYS[1], 'owner') ~= ARGV[1] then
  return -1
end
local n = redis.call('hincrby', KEYS[1], 'count', -1)
if n > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return n
end
redis.call('del', KEYS[1])
if redis.call('llen', KEYS[2]) == 0 then
  redis.call('rpush', KEYS[2], 'ok')
end
return 0`),
	renew: redis.NewScript(`
if redis.call('hget', KEYS[1], 'owner') == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0`),
}

// notifyKey names the channel (reentrant) or list (reentrant-blpop) on
// which a release wakes the waiters of key. The braces make Redis Cluster
// hash only the lock's own name, so both keys of the release script live in
// one slot (a key without braces hashes whole: the same slot).
func notifyKey(key string) string {
	if strings.ContainsAny(key, "{}") {
		return key + ":unlocked" // the key chose its own hash tag
	}
	return "{" + key + "}:unlocked"
}

// reentrantLock is the owner-aware counting lock of Redisson's RLock (seed
// 001) and of seed 003: the same owner may acquire a key it holds again (the
// seed's foo() calling bar(), 可重入性), each acquire counts up, each release
// counts down, and only the release that reaches zero frees the key. While
// an owner holds a key, a watchdog renews it every ttl/3.
//
// It exists to show what the count adds to the token lock's failures: a
// retried script (go-redis replays a command whose reply was lost) counts an
// acquisition twice, so the outermost release leaves the key held until its
// TTL, or counts a release twice, so a nested release frees a key whose
// outer holder is still at work. The watchdog's weaknesses are inherited.
type reentrantLock struct {
	cfg     Config
	name    string
	scripts reentrantScripts
	blpop   bool // waiters BLPOP the notification list instead of subscribing
	owner   string
	n       int
	// held counts this owner's local holds per key: the watchdog runs from
	// the first to the last. The lock is used by one process at a time.
	held map[string]*heldKey
}

type heldKey struct {
	depth int
	lease *Lease // the lease whose watchdog renews the key
}

func newReentrant(cfg Config) (Lock, error) { return buildReentrant(cfg, "reentrant", false) }

func newReentrantBLPOP(cfg Config) (Lock, error) { return buildReentrant(cfg, "reentrant-blpop", true) }

func buildReentrant(cfg Config, name string, blpop bool) (Lock, error) {
	if err := cfg.checkTTL(name, 1); err != nil {
		return nil, err
	}
	s := rlockScripts
	if blpop {
		s = blpopScripts
	}
	return &reentrantLock{cfg: cfg, name: name, scripts: s, blpop: blpop, owner: cfg.NewToken(),
		held: map[string]*heldKey{}}, nil
}

// try runs the acquire script once: acquired with the owner's count, or not
// with the key's remaining time to live in milliseconds.
func (l *reentrantLock) try(ctx context.Context, key string) (bool, int64, error) {
	v, err := l.scripts.acquire.Run(ctx, l.cfg.Nodes[0], []string{key}, l.owner, l.cfg.TTL.Milliseconds()).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	if len(v) != 2 {
		return false, 0, fmt.Errorf("acquire script of %s returned %v", key, v)
	}
	return v[0] == 1, v[1], nil
}

// Acquire takes key, or counts one more hold when this owner has it. A
// waiter subscribes to the key's channel (or BLPOPs its list) and retries
// when woken, when the holder's remaining TTL has passed, or at the end of
// the lock's wait, whichever comes first.
func (l *reentrantLock) Acquire(ctx context.Context, key string) (*Lease, error) {
	deadline := time.Now().Add(l.cfg.Wait)
	var sub *redis.PubSub
	defer func() {
		if sub != nil {
			_ = sub.Close()
		}
	}()
	for {
		if err := l.cfg.Hooks.step(ctx, "attempt"); err != nil {
			return nil, err
		}
		ok, v, err := l.try(ctx, key)
		if err != nil {
			return nil, err
		}
		if ok {
			return l.granted(ctx, key, v), nil
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return nil, ErrNotAcquired
		}
		// The holder's key expires within its pttl even if no release
		// ever wakes us; 0 or less means it is about to go.
		wait := min(remaining, l.cfg.retryDelay())
		if v > 0 {
			wait = min(remaining, time.Duration(v)*time.Millisecond)
		}
		if err := l.cfg.Hooks.step(ctx, "wait"); err != nil {
			return nil, err
		}
		if l.blpop {
			err = l.popNotification(ctx, key, wait)
		} else {
			if sub == nil {
				// Subscribe before the next attempt, so that a release
				// between that attempt and the wait is not missed.
				if sub = l.subscribe(ctx, key, remaining); sub != nil {
					continue
				}
			}
			err = l.awaitMessage(ctx, &sub, wait)
		}
		if err != nil {
			// No lock command is in flight while waiting: a definite failure.
			return nil, fmt.Errorf("%w: %v", ErrNotAcquired, err)
		}
	}
}

// granted makes the lease of an acquire the script granted with count.
func (l *reentrantLock) granted(ctx context.Context, key string, count int64) *Lease {
	l.n++
	lease := &Lease{Key: key, Token: reentrantToken(l.owner, l.n, count), TTL: l.cfg.TTL}
	h := l.held[key]
	if h == nil {
		h = &heldKey{}
		l.held[key] = h
	}
	h.depth++
	// The first local hold starts the watchdog; so does a count of 1 under
	// a nested hold: the key was lost and taken afresh, and the watchdog of
	// the outer hold has stopped on finding it gone.
	if h.depth == 1 || count == 1 {
		if h.lease != nil && h.lease != lease {
			h.lease.StopRenewal()
		}
		h.lease = lease
		startWatchdog(ctx, l.cfg, lease, func(ctx context.Context) (bool, error) {
			n, err := l.scripts.renew.Run(ctx, l.cfg.Nodes[0], []string{key}, l.owner, l.cfg.TTL.Milliseconds()).Int64()
			return n > 0, err
		})
	}
	return lease
}

// subscribe returns a subscription to key's channel once Redis confirmed
// it, or nil (the waiter then polls) when that fails within wait.
func (l *reentrantLock) subscribe(ctx context.Context, key string, wait time.Duration) *redis.PubSub {
	ps := l.cfg.Nodes[0].Subscribe(ctx, notifyKey(key))
	if _, err := ps.ReceiveTimeout(ctx, wait); err != nil {
		_ = ps.Close()
		return nil
	}
	return ps
}

// awaitMessage waits up to d for the release message. Without a working
// subscription it sleeps a retry delay instead; a broken one is dropped.
func (l *reentrantLock) awaitMessage(ctx context.Context, sub **redis.PubSub, d time.Duration) error {
	if *sub == nil {
		return pause(ctx, min(d, l.cfg.retryDelay()))
	}
	_, err := (*sub).ReceiveTimeout(ctx, d)
	var ne interface{ Timeout() bool }
	switch {
	case err == nil, errors.As(err, &ne) && ne.Timeout():
		return ctx.Err()
	case ctx.Err() != nil:
		return ctx.Err()
	}
	_ = (*sub).Close()
	*sub = nil
	return nil
}

// popNotification BLPOPs key's notification list for up to d. go-redis's
// BLPop rounds its timeout up to whole seconds and does not cut a read at
// the context's deadline, so a waiter would sleep through a second in which
// the key may have expired: the timeout goes to the server in seconds with a
// fraction (Redis 6 and later), and the context bounds the rest.
func (l *reentrantLock) popNotification(ctx context.Context, key string, d time.Duration) error {
	if t := l.cfg.CommandTimeout; t > 0 {
		// The reply must come within the client's read timeout.
		d = min(d, t*3/4)
	}
	wctx, cancel := context.WithTimeout(ctx, d+l.cfg.retryDelay())
	defer cancel()
	secs := strconv.FormatFloat(max(d, time.Millisecond).Seconds(), 'f', 3, 64)
	err := l.cfg.Nodes[0].Do(wctx, "BLPOP", notifyKey(key), secs).Err()
	if err != nil && ctx.Err() == nil && !errors.Is(err, redis.Nil) && wctx.Err() == nil {
		// A broken connection: do not spin on it.
		return pause(ctx, min(d, l.cfg.retryDelay()))
	}
	return ctx.Err()
}

// Release implements Lock: deleted is true when this release ended the
// owner's hold and freed the key.
func (l *reentrantLock) Release(ctx context.Context, lease *Lease) (bool, error) {
	left, err := l.ReleaseCount(ctx, lease)
	return err == nil && left == 0, err
}

// ReleaseCount implements CountReleaser.
func (l *reentrantLock) ReleaseCount(ctx context.Context, lease *Lease) (int64, error) {
	if h := l.held[lease.Key]; h != nil {
		h.depth--
		if h.depth <= 0 {
			h.lease.StopRenewal()
			delete(l.held, lease.Key)
		}
	}
	lease.StopRenewal()
	if err := l.cfg.Hooks.step(ctx, "release"); err != nil {
		return -1, err
	}
	left, err := l.scripts.release.Run(ctx, l.cfg.Nodes[0], []string{lease.Key, notifyKey(lease.Key)},
		l.owner, l.cfg.TTL.Milliseconds()).Int64()
	if err != nil {
		return -1, err
	}
	return left, nil
}
