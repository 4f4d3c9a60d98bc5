package locks

import (
	"context"
	"errors"
	"time"
)

// ErrUnobserved is returned (wrapped) by a Release whose lock does not say
// whether it deleted the key: a library that releases in the background and
// reports nothing. The harness records such a release as an unknown outcome,
// which the checkers take as "may or may not have deleted it", rather than
// guessing a deleted flag that could accuse or clear the lock wrongly.
var ErrUnobserved = errors.New("the lock does not report whether its release deleted the key")

// Closer is implemented by a Lock that owns resources of its own (a
// third-party client with its own connections and goroutines). The harness
// calls Close when the client process ends, after its gate has crashed, so
// nothing it does on the way out reaches Redis, as after kill -9.
type Closer interface {
	Close() error
}

// DefaultRetryDelay is the longest pause between acquire attempts when
// Config.RetryDelay is unset: a twentieth of the TTL, at least 1 ms. It is
// exported so that adapters of third-party locks pace their library's
// retries like the built-in locks, and runs compare algorithms, not pacing.
func DefaultRetryDelay(ttl time.Duration) time.Duration {
	return max(ttl/20, time.Millisecond)
}

// firstRetryDelay is where the default pacing starts: a key that was held
// a moment ago is often free again within a few round trips, and a fixed
// pause of a twentieth of the TTL left most clients of a busy run asleep
// beside a free key.
const firstRetryDelay = time.Millisecond

// RetryDelayOrDefault is the longest pause between acquire attempts: the
// configured RetryDelay, or DefaultRetryDelay of the TTL.
func (c Config) RetryDelayOrDefault() time.Duration {
	if c.RetryDelay > 0 {
		return max(c.RetryDelay, time.Millisecond)
	}
	return DefaultRetryDelay(c.TTL)
}

// baseRetryDelay is the pause after the n-th failed attempt of one acquire
// (n from 1), before jitter: RetryDelay every time when it is set; else a
// backoff from a millisecond, doubling up to DefaultRetryDelay.
func (c Config) baseRetryDelay(n int) time.Duration {
	top := c.RetryDelayOrDefault()
	if c.RetryDelay > 0 || n >= 32 {
		return top
	}
	return min(top, firstRetryDelay<<max(n-1, 0))
}

// RetryDelayAt is the pause after the n-th failed attempt of one acquire
// (n from 1), plus a jitter of up to half of it drawn from Rand, so that
// contenders do not retry in lockstep and a run replays from its seed. With
// RetryDelay unset the pauses back off from a millisecond to
// DefaultRetryDelay: a short hold is retried soon, a long one is not polled
// more than about twenty times a TTL.
func (c Config) RetryDelayAt(n int) time.Duration {
	d := c.baseRetryDelay(n)
	return d + time.Duration(c.Rand.Int63n(int64(d)/2+1))
}

// NextRetryDelay is the steady pause between attempts (RetryDelayAt once
// the backoff is over), for a lock that keeps no count of its attempts.
func (c Config) NextRetryDelay() time.Duration { return c.RetryDelayAt(32) }

// Attempts is how many attempts fit in Wait at the mean jittered pace of
// RetryDelayAt (at least one): for libraries that bound their retrying by a
// count rather than a time.
func (c Config) Attempts() int {
	if c.Wait <= 0 {
		return 1
	}
	// The backoff reaches its top within 32 pauses; past it every pause is
	// the same, so the rest is a division, however long Wait is.
	n, spent := 1, time.Duration(0)
	for ; n < 32; n++ {
		d := c.baseRetryDelay(n) * 5 / 4
		if spent+d > c.Wait {
			return n
		}
		spent += d
	}
	return n + int((c.Wait-spent)/(c.baseRetryDelay(n)*5/4))
}

// Reach is Step for a lock outside this package: it tells the harness the
// process has reached a protocol point (blocking while it is paused, failing
// once it crashed), and with no Step hook set it only checks ctx.
func (h Hooks) Reach(ctx context.Context, point string) error { return h.step(ctx, point) }

// Retry is the acquire loop of this package's single-node locks for a lock
// outside it: attempt runs after an "attempt" point until it acquires or
// fails, with RetryDelayAt's pauses between tries, and the loop gives up
// with ErrNotAcquired where the next pause would end past Wait.
func Retry(ctx context.Context, cfg Config, attempt func(context.Context) (bool, error)) error {
	return retry(ctx, cfg, attempt)
}

// StartWatchdog is the built-in watchdog's renewal for a lock outside this
// package: every TTL/3 while the lease is held, a "watchdog" point, then
// renew, recorded through Hooks.Renew (extended; ErrNotAcquired when renew
// reports the key is no longer ours, which stops it; a failure, retried at
// the next tick). The lock's Release stops it first (Lease.StopRenewal), as
// the built-in locks do. A library with no watchdog of its own is kept alive so
// by its callers (redsync's Extend, a re-Acquire), and this is that loop.
func StartWatchdog(ctx context.Context, cfg Config, lease *Lease, renew func(context.Context) (bool, error)) {
	startWatchdog(ctx, cfg, lease, renew)
}
