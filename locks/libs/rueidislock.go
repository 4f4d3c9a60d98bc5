package libs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/locktorture/locktorture/locks"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidislockLock adapts the rueidislock package of github.com/redis/rueidis,
// which does not use go-redis: it opens its own rueidis client, here to
// Config.Addrs[0] through Config.Dial (the client's proxies and gate) with
// Config.CommandTimeout as its connection timeout.
//
// What the library does: a lock is a majority (2) of 3 keys
// (rueidislock:<i>:<key>, named to the faults by StoredKey) on the one node, each SET NX PXAT with a random
// value of the library's own (Lease.Token is the harness's NewToken value,
// which only names the acquisition in the history), each key tried for at
// most 20 ms. Held keys are extended every half of the validity (the TTL
// here) in the background, and the lock's context is cancelled once a
// majority is lost. Waiters do not poll: client-side caching (CLIENT
// TRACKING) tells them when a key changes. Release cancels the lock; the
// background goroutines then compare-and-delete each key with no deadline
// and report nothing, so the adapter bounds the wait by ctx and records
// the release as unobserved (locks.ErrUnobserved: an unknown outcome).
//
// It is expected to behave like `watchdog`: long work survives (the keys are
// extended), a stop-the-world pause does not (the renewal stops with the
// work, the keys expire, another client takes them).
type rueidislockLock struct {
	cfg    locks.Config
	locker rueidislock.Locker
}

// rueidisHold is what rides on the lease: the lock's context (done once the
// library lost the lock) and the cancel function that releases it.
type rueidisHold struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func newRueidislock(cfg locks.Config) (locks.Lock, error) {
	if err := checkConfig("rueidislock", cfg); err != nil {
		return nil, err
	}
	if len(cfg.Addrs) < 1 || cfg.Dial == nil {
		return nil, errors.New("lock rueidislock dials Redis itself and needs the masters' addresses and a dialer (topology single or redlock)")
	}
	dial := cfg.Dial
	opt := rueidis.ClientOption{
		InitAddress:       cfg.Addrs[:1],
		ForceSingleClient: true,
		DialCtxFn: func(ctx context.Context, addr string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return dial(ctx, "tcp", addr)
		},
	}
	if cfg.CommandTimeout > 0 {
		opt.Dialer.Timeout, opt.ConnWriteTimeout = cfg.CommandTimeout, cfg.CommandTimeout
	}
	locker, err := rueidislock.NewLocker(rueidislock.LockerOption{ClientOption: opt, KeyValidity: cfg.TTL})
	if err != nil {
		return nil, fmt.Errorf("rueidislock: connect to %s: %w", cfg.Addrs[0], err)
	}
	return &rueidislockLock{cfg: cfg, locker: locker}, nil
}

// StoredKey implements locks.KeyNamer: the library writes three keys of
// its own making, "rueidislock:<i>:<key>", and holds the lock while it has
// two of them; the first is the one it always takes. (Its value is the
// library's own random bytes, so a fault that compares a key's value with
// the lease's token does not find it; one that reads whether a key exists
// does.)
func (l *rueidislockLock) StoredKey(key string) string { return "rueidislock:0:" + key }

// Close closes the library's client, ending its background goroutines.
func (l *rueidislockLock) Close() error {
	l.locker.Close()
	return nil
}

func (l *rueidislockLock) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	if err := l.cfg.Hooks.Reach(ctx, "attempt"); err != nil {
		return nil, err
	}
	token := l.cfg.NewToken()
	// The lock lives as long as the context it was taken under, and the
	// library shortens the keys' validity to that context's deadline: so
	// the wait is bounded by cancelling, never by a deadline, and only
	// while the acquire is still waiting.
	base, stop := context.WithCancel(context.WithoutCancel(ctx))
	var mu sync.Mutex
	returned, gaveUp := false, false
	giveUp := func() {
		mu.Lock()
		defer mu.Unlock()
		if !returned {
			gaveUp = true
			stop()
		}
	}
	var lctx context.Context
	var cancel context.CancelFunc
	var err error
	if l.cfg.Wait <= 0 {
		lctx, cancel, err = l.locker.TryWithContext(base, key)
	} else {
		t := time.AfterFunc(l.cfg.Wait, giveUp)
		unwatch := context.AfterFunc(ctx, giveUp)
		lctx, cancel, err = l.locker.WithContext(base, key)
		t.Stop()
		unwatch()
	}
	mu.Lock()
	returned = true
	late := gaveUp
	mu.Unlock()
	switch {
	case err == nil && late:
		// Taken just as the wait ran out, and already being given back.
		cancel()
		stop()
		return nil, fmt.Errorf("rueidislock %s: acquired as the wait ended and released at once", key)
	case err == nil:
		return &locks.Lease{Key: key, Token: token, TTL: l.cfg.TTL, Handle: &rueidisHold{ctx: lctx, cancel: func() { cancel(); stop() }}}, nil
	case errors.Is(err, rueidislock.ErrNotLocked), late && errors.Is(err, context.Canceled):
		stop()
		return nil, fmt.Errorf("rueidislock %s: %w: %v", key, locks.ErrNotAcquired, err)
	}
	stop()
	return nil, fmt.Errorf("rueidislock %s: %w", key, err)
}

func (l *rueidislockLock) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	h, ok := lease.Handle.(*rueidisHold)
	if !ok {
		return false, errors.New("rueidislock: release of a lease it did not hand out")
	}
	if err := l.cfg.Hooks.Reach(ctx, "release"); err != nil {
		return false, err
	}
	done := make(chan struct{})
	go func() { defer close(done); h.cancel() }()
	select {
	case <-done:
	case <-ctx.Done():
		return false, fmt.Errorf("rueidislock release %s: %w", lease.Key, ctx.Err())
	}
	return false, fmt.Errorf("rueidislock release %s: %w", lease.Key, locks.ErrUnobserved)
}
