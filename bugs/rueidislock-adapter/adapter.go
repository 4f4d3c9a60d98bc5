// Package adapter puts redis/rueidis's rueidislock under locktorture, for
// the museum's rueidislock exhibits: one source that compiles against every
// version they pin (v1.0.43 to v1.0.70). Its module requires the oldest of
// them, so each exhibit's own pin is the version its binary holds.
package adapter

import (
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/locktorture/locktorture/locks"
)

// lock calls rueidislock as its users do: one Locker per lock object (per
// client, or per group of clients under --share), WithContext to take a
// name (TryWithContext when the run does not wait), and the CancelFunc it
// returns to give the name back. The library takes a majority (2) of 3
// keys <prefix>:<i>:<name> with one random binary value of its own,
// extends them in the background every half of KeyValidity (the run's TTL
// here) and deletes them when cancelled.
//
// The library builds its own rueidis client (dialled to the master through
// Config.Dial) and the lock hands it one that embeds that client and sees
// every command (watched.Do): all of the library's commands are its six
// Lua scripts. Before each the harness's step is reached; each extend of
// key 0 is reported as a renewal, with the majority of the three keys as
// its outcome; a release deleted something when one of its deletes did.
// Nothing of the library's locking is done here.
type lock struct {
	cfg    locks.Config
	opt    Options
	locker rueidislock.Locker

	mu       sync.Mutex
	holds    map[string]*hold         // by the library's value of the try that won
	exp      map[string]*[3]time.Time // by value: the expiry each key was last written with
	noscript map[string]func(error)   // an extend renewal whose EVALSHA met NOSCRIPT, by key and value
	renewing map[int]bool             // clients with a renewal open (one at a time, as a watchdog)
}

// Options are the program's flags: LockerOption fields.
type Options struct {
	KeyPrefix      string
	NoLoopTracking bool
	TryNextAfter   time.Duration
}

// hold is a lease's state: Lease.Handle.
type hold struct {
	lease  *locks.Lease
	client int
	val    string
	cancel func()
	rel    *release // set while Release runs
}

type release struct {
	ctx                   context.Context
	sent, deleted, failed int
}

// acquiring rides on the context given to WithContext, which the library
// passes to the commands of its tries (and to the extends of the lock
// they take): it tells an attempt of this request from background work.
type acquiring struct {
	req  context.Context
	done atomic.Bool
	val  atomic.Value // the value of the request's last try
}

type acquiringKey struct{}

// The library's scripts by the SHA1 of their text (the same at every
// version these exhibits pin).
const (
	shaAcquire = "3875d208d9e377969d2022550302cc83ad17b584" // SET NX PXAT, GET
	shaExtend  = "852ba6ec6104340ced36643283c856d4698569e4" // if GET == value: PEXPIREAT, GET
	shaDelete  = "9eb62214c9af87ae5f9a9f12bb4520281c0d2ae1" // if GET == value: DEL
)

// New builds one lock object over a Locker of its own, dialled to the
// master through cfg.Dial, with the LockerOption fields opt sets.
func New(cfg locks.Config, opt Options) (locks.Lock, error) {
	if len(cfg.Addrs) == 0 || cfg.Dial == nil {
		return nil, errors.New("rueidislock dials the master itself: topology single")
	}
	if opt.KeyPrefix == "" {
		opt.KeyPrefix = "rueidislock" // the library's default
	}
	l := &lock{cfg: cfg, opt: opt, holds: map[string]*hold{}, exp: map[string]*[3]time.Time{},
		noscript: map[string]func(error){}, renewing: map[int]bool{}}
	// DialFn, not DialCtxFn: the latter is newer than v1.0.50.
	co := rueidis.ClientOption{InitAddress: cfg.Addrs[:1], ForceSingleClient: true,
		DialFn: func(addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
			ctx := context.Background()
			if d.Timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, d.Timeout)
				defer cancel()
			}
			return cfg.Dial(ctx, "tcp", addr)
		}}
	if cfg.CommandTimeout > 0 {
		co.Dialer.Timeout, co.ConnWriteTimeout = cfg.CommandTimeout, cfg.CommandTimeout
	}
	if r := cfg.RedisRetries; r != nil && *r < 0 {
		co.DisableRetry = true
	}
	locker, err := rueidislock.NewLocker(rueidislock.LockerOption{ClientOption: co, KeyValidity: cfg.TTL,
		KeyPrefix: opt.KeyPrefix, NoLoopTracking: opt.NoLoopTracking, TryNextAfter: opt.TryNextAfter,
		ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(o)
			return watched{Client: c, l: l}, err
		}})
	if err != nil {
		return nil, fmt.Errorf("rueidislock: connect to %s: %w", cfg.Addrs[0], err)
	}
	l.locker = locker
	return l, nil
}

// StoredKey names key 0 of the three, the one a waiter must take first
// (locks.KeyNamer). Its value is the library's, not the lease's token.
func (l *lock) StoredKey(key string) string { return l.opt.KeyPrefix + ":0:" + key }

// Close closes the library's client when the process ends.
func (l *lock) Close() error { l.locker.Close(); return nil }

// keyIndex is i of the key <prefix>:<i>:<name>.
func (l *lock) keyIndex(k string) (int, bool) {
	p := l.opt.KeyPrefix + ":"
	if len(k) > len(p)+1 && k[:len(p)] == p && k[len(p)] >= '0' && k[len(p)] <= '2' {
		return int(k[len(p)] - '0'), true
	}
	return 0, false
}

// held is whether two of the three keys of value val are surely still
// alive: when the second-latest expiry written is in the future.
func (l *lock) held(val string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	x := l.exp[val]
	if x == nil {
		return false
	}
	t := []time.Time{x[0], x[1], x[2]}
	slices.SortFunc(t, func(a, b time.Time) int { return b.Compare(a) })
	return t[1].After(time.Now())
}

// watched is the library's client, its commands seen on the way.
type watched struct {
	rueidis.Client
	l *lock
}

func (w watched) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	l := w.l
	args := append([]string(nil), cmd.Commands()...) // the client recycles cmd after Do
	if len(args) != 6 || (args[0] != "EVALSHA" && args[0] != "EVAL") {
		return w.Client.Do(ctx, cmd)
	}
	sha := args[1] // EVALSHA sha 1 key value ms, or EVAL script 1 key value ms
	if args[0] == "EVAL" {
		s := sha1.Sum([]byte(args[1]))
		sha = hex.EncodeToString(s[:])
	}
	key, val := args[3], args[4]
	sc := l.scriptCall(ctx, sha, key, val)
	if err := l.cfg.Hooks.Reach(sc.stepCtx, sc.point); err != nil {
		// A crashed client sends nothing: an error result, not sent.
		dead, cancel := context.WithCancel(ctx)
		cancel()
		r := w.Client.Do(dead, cmd)
		if sc.renewed != nil {
			sc.renewed(err)
		}
		return r
	}
	r := w.Client.Do(ctx, cmd)
	if e, ok := rueidis.IsRedisErr(r.Error()); ok && e.IsNoScript() {
		// The library sends the script again as EVAL at once: that one
		// counts, and a renewal opened here stays open for it.
		if sc.renewed != nil {
			l.mu.Lock()
			l.noscript[key+"\x00"+val] = sc.renewed
			l.mu.Unlock()
		}
		return r
	}
	n, err := r.AsInt64()
	l.noteExpiry(sha, key, val, args[5], r.Error() == nil, err == nil && n == 1, err == nil)
	l.settle(sc, val, n, err)
	return r
}

// scriptCall is what one of the library's scripts is to the harness: the
// step it is (its context and point), and the renewal or release it
// reports to.
type scriptCall struct {
	stepCtx context.Context
	point   string
	renewed func(error) // an open renewal's outcome
	rel     *release
}

// scriptCall tells which of the library's scripts sha is, for key and val,
// and opens the renewal a watchdog's extend is.
func (l *lock) scriptCall(ctx context.Context, sha, key, val string) scriptCall {
	sc := scriptCall{stepCtx: context.Background(), point: "watchdog"}
	var renew *hold
	l.mu.Lock()
	h := l.holds[val]
	switch sha {
	case shaAcquire:
		sc.point = "background-acquire" // the third key, taken after WithContext returned
		if a, _ := ctx.Value(acquiringKey{}).(*acquiring); a != nil && !a.done.Load() {
			a.val.Store(val)
			sc.stepCtx, sc.point = a.req, "attempt"
		}
	case shaExtend:
		if f := l.noscript[key+"\x00"+val]; f != nil {
			delete(l.noscript, key+"\x00"+val) // the EVAL after a NOSCRIPT: its renewal is open
			sc.renewed = f
		} else if h != nil && h.rel == nil && !l.renewing[h.client] && key == l.StoredKey(h.lease.Key) {
			l.renewing[h.client] = true
			renew = h
		}
	case shaDelete:
		sc.point = "cleanup" // the library's own, after a lock was lost or a try failed
		if h != nil && h.rel != nil {
			sc.rel, sc.stepCtx, sc.point = h.rel, h.rel.ctx, "release"
			if sc.rel.sent++; sc.rel.sent > 1 {
				sc.point = "release-next-key" // the three keys' deletes go out at once
			}
		}
	}
	l.mu.Unlock()
	if renew != nil {
		done := l.cfg.Hooks.Renew(renew.lease)
		sc.renewed = func(err error) {
			done(err)
			l.mu.Lock()
			delete(l.renewing, renew.client)
			l.mu.Unlock()
		}
	}
	return sc
}

// noteExpiry keeps when the library's acquire or extend of val on key
// (PX ms) makes the key expire: written (an acquire that did not fail, an
// extend that answered 1), or gone (an extend that answered 0).
func (l *lock) noteExpiry(sha, key, val, ms string, acquired, extended, answered bool) {
	i, ok := l.keyIndex(key)
	if !ok || (sha != shaExtend && sha != shaAcquire) {
		return
	}
	px, _ := strconv.ParseInt(ms, 10, 64)
	l.mu.Lock()
	defer l.mu.Unlock()
	x := l.exp[val]
	if x == nil {
		x = &[3]time.Time{}
		l.exp[val] = x
	}
	switch {
	case sha == shaAcquire && acquired, sha == shaExtend && extended:
		x[i] = time.UnixMilli(px) // written; a nil reply to the SET NX: held by another
	case sha == shaExtend && answered:
		x[i] = time.Time{} // gone
	}
}

// settle reports the script's outcome (n, err) to the renewal or release
// it served.
func (l *lock) settle(sc scriptCall, val string, n int64, err error) {
	switch {
	case sc.renewed == nil:
	case err != nil:
		sc.renewed(err)
	case l.held(val):
		sc.renewed(nil)
	default:
		sc.renewed(locks.ErrNotAcquired)
	}
	if sc.rel != nil {
		l.mu.Lock()
		if err != nil {
			sc.rel.failed++
		} else if n == 1 {
			sc.rel.deleted++
		}
		l.mu.Unlock()
	}
}

func (l *lock) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	token := l.cfg.NewToken()
	// The lock lives as long as the context it was taken under (and from
	// v1.0.50 the library shortens the keys' validity to its deadline):
	// the wait is bounded by cancelling it, only while the acquire waits.
	a := &acquiring{req: ctx}
	base, stop := context.WithCancel(context.WithValue(context.Background(), acquiringKey{}, a))
	var gaveUp atomic.Bool
	var cancel context.CancelFunc
	var err error
	if l.cfg.Wait <= 0 {
		_, cancel, err = l.locker.TryWithContext(base, key)
	} else {
		giveUp := func() { gaveUp.Store(true); stop() }
		t := time.AfterFunc(l.cfg.Wait, giveUp)
		unwatch := context.AfterFunc(ctx, giveUp)
		_, cancel, err = l.locker.WithContext(base, key)
		t.Stop()
		unwatch()
	}
	a.done.Store(true)
	switch {
	case err == nil && gaveUp.Load():
		cancel()
		stop()
		return nil, fmt.Errorf("rueidislock %s: acquired as the wait ended and released at once", key)
	case err == nil:
		val, _ := a.val.Load().(string)
		lease := &locks.Lease{Key: key, Token: token, TTL: l.cfg.TTL}
		client, _ := locks.ClientFrom(ctx)
		h := &hold{lease: lease, client: client, val: val, cancel: func() { cancel(); stop() }}
		lease.Handle = h
		l.mu.Lock()
		l.holds[val] = h
		l.mu.Unlock()
		return lease, nil
	case errors.Is(err, rueidislock.ErrNotLocked), gaveUp.Load() && errors.Is(err, context.Canceled):
		stop()
		return nil, fmt.Errorf("rueidislock %s: %w: %v", key, locks.ErrNotAcquired, err)
	}
	stop()
	return nil, fmt.Errorf("rueidislock %s: %w", key, err)
}

// Release cancels the lock's context and waits for the library to delete
// its keys, at most two TTLs: a wedged monitor may never let it return.
func (l *lock) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	h, ok := lease.Handle.(*hold)
	if !ok {
		return false, errors.New("rueidislock: release of a lease it did not hand out")
	}
	rel := &release{ctx: ctx}
	l.mu.Lock()
	h.rel = rel
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.holds, h.val)
		delete(l.exp, h.val)
		l.mu.Unlock()
	}()
	done := make(chan struct{})
	go func() { defer close(done); h.cancel() }()
	bound := time.NewTimer(2 * l.cfg.TTL)
	defer bound.Stop()
	select {
	case <-done:
	case <-bound.C:
		return false, fmt.Errorf("rueidislock release %s: the library's cancel did not return within %v", lease.Key, 2*l.cfg.TTL)
	case <-ctx.Done():
		return false, fmt.Errorf("rueidislock release %s: %w", lease.Key, ctx.Err())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if rel.failed > 0 {
		return false, fmt.Errorf("rueidislock release %s: %d of its deletes failed", lease.Key, rel.failed)
	}
	return rel.deleted > 0, nil
}
