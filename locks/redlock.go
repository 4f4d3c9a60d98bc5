package locks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// redlockLock is Redlock as published (redis.io, "Distributed Locks with
// Redis"), the answer seeds 001 (Redisson's RedLock) and 002 give to the
// single point of failure of a one-node lock: N independent masters, no
// replication.
//
// An attempt writes the same key and one random token (fresh for each
// attempt) to every master in parallel with SET NX PX ttl, each under a
// per-node timeout much smaller than the TTL, so a dead node costs
// milliseconds and not the lease. It succeeds only when a majority (N/2+1)
// said OK and the lease still has time left once the attempt and the clock
// drift are paid for: validity = TTL - elapsed - drift, drift = 1% of the TTL
// + 2 ms, returned as Lease.Validity. A lost attempt is undone on every node
// (a SET whose reply was lost may still have landed), then retried after a
// random delay, within Config.Wait.
//
// Release runs compare-and-delete on every node, also those whose SET failed
// or timed out: seed 002's "加锁失败" case, where a node ran the SET but its
// acknowledgement was lost, would otherwise keep the key and refuse every
// other client until its TTL. A node that does not answer an unlock is asked
// again in the background until it does or the key has expired.
//
// It exists to show what a quorum does and does not buy. It survives a
// minority of masters down, restarted after the TTL, partitioned or slow
// (slower: every client cut from a minority splits the bare majority left
// among contenders), and a lost acknowledgement on one node. It breaks when
// a master forgets a key it acknowledged while the lease still runs: a
// restart without persistence (seed 002's "重启问题"), or a clock that jumps
// forward and expires the key early, together with a partition that left the
// holder no key to spare; and, like every lease, when the holder pauses
// after acquiring.
//
// With watchdog set it is Redisson's RedLock with its watchdog: the lease is
// extended every TTL/3 on every node, and counts as extended only when a
// majority extended it within the lease's current validity. Long work then
// survives; a restart-empty master and a stop-the-world pause (which stops
// the watchdog with the work) still break it.
type redlockLock struct {
	cfg      Config
	watchdog bool
	quorum   int
	// perNode bounds each node's reply: much smaller than the TTL.
	perNode time.Duration
	drift   time.Duration
}

// Redlock timing, from the published algorithm: a node that does not answer
// within a small fraction of the TTL is counted as failed, and the clock
// drift allowance is 1% of the TTL plus 2 ms. The per-node timeout's top
// is not the few tens of milliseconds the algorithm's text suggests for a
// 10 s TTL: through the fault proxies of a busy machine running many
// clients on 7 nodes, 50 ms made most attempts time out on some node, with
// no fault at all, so a run of long TTLs tested unavailability instead of
// safety. A tenth of the TTL up to 250 ms keeps a dead node's cost far
// below the lease.
const (
	redlockNodeTimeoutShare = 10 // per-node timeout = TTL / 10 ...
	redlockNodeTimeoutMin   = 5 * time.Millisecond
	redlockNodeTimeoutMax   = 250 * time.Millisecond // ... within these bounds
	redlockDriftShare       = 100
	redlockDriftFloor       = 2 * time.Millisecond
)

// RedlockNodes is the fewest masters Redlock runs on: with fewer than three a
// majority tolerates no failure at all.
const RedlockNodes = 3

func newRedlock(watchdog bool) Factory {
	name := "redlock"
	if watchdog {
		name = "redlock-watchdog"
	}
	return func(cfg Config) (Lock, error) {
		if err := cfg.checkTTL(name, RedlockNodes); err != nil {
			return nil, err
		}
		per := cfg.TTL / redlockNodeTimeoutShare
		per = min(max(per, redlockNodeTimeoutMin), redlockNodeTimeoutMax)
		if cfg.CommandTimeout > 0 {
			// A per-command timeout the user set binds here as on every
			// other topology: a slow path (containers, a remote Redis)
			// needs more than the default's few tens of milliseconds.
			per = min(cfg.CommandTimeout, cfg.TTL/2)
		}
		return &redlockLock{cfg: cfg, watchdog: watchdog, quorum: len(cfg.Nodes)/2 + 1, perNode: per,
			drift: cfg.TTL/redlockDriftShare + redlockDriftFloor}, nil
	}
}

// tally is what one round of commands on every node gave.
type tally struct {
	ok     int   // nodes that did what was asked
	failed int   // nodes that definitely did not (key held by another, not ours)
	errs   []int // nodes with no definite answer (timeout, reset, refused)
	// okAt records, per node, whether it answered ok.
	okAt []bool
	err  error // the errors of errs, joined
}

// onEvery runs cmd on every node at once and waits for the replies until
// the per-node timeout. The lock enforces that timeout itself: go-redis
// leaves a context's deadline off its sockets unless ContextTimeoutEnabled is
// set (its default, and what most users run), so a node that does not
// answer would otherwise cost its ReadTimeout, seconds, not milliseconds. A
// command still running at the timeout counts as no answer; it finishes in
// the background, and the deadline is still on its context for a client that
// honours it.
func (l *redlockLock) onEvery(ctx context.Context, cmd func(ctx context.Context, node redis.UniversalClient) (bool, error)) tally {
	type reply struct {
		i   int
		ok  bool
		err error
	}
	n := len(l.cfg.Nodes)
	replies := make(chan reply, n) // buffered: a late reply never blocks
	for i, node := range l.cfg.Nodes {
		go func() {
			nctx, cancel := context.WithTimeout(ctx, l.perNode)
			defer cancel()
			ok, err := cmd(nctx, node)
			replies <- reply{i, ok, err}
		}()
	}
	oks := make([]bool, n)
	errs := make([]error, n)
	for i := range errs {
		errs[i] = fmt.Errorf("no reply within the per-node timeout of %v", l.perNode)
	}
	timer := time.NewTimer(l.perNode)
	defer timer.Stop()
wait:
	for got := 0; got < n; got++ {
		select {
		case r := <-replies:
			oks[r.i], errs[r.i] = r.ok, r.err
		case <-timer.C:
			break wait
		}
	}
	t := tally{okAt: oks}
	var all []error
	for i := range n {
		switch {
		case errs[i] != nil && neverSent(errs[i]):
			t.failed++
		case errs[i] != nil:
			t.errs = append(t.errs, i)
			all = append(all, fmt.Errorf("node %d: %w", i, errs[i]))
		case oks[i]:
			t.ok++
		default:
			t.failed++
		}
	}
	t.err = errors.Join(all...)
	return t
}

func (l *redlockLock) setAll(ctx context.Context, key, token string) tally {
	return l.onEvery(ctx, func(ctx context.Context, node redis.UniversalClient) (bool, error) {
		return node.SetNX(ctx, key, token, l.cfg.TTL).Result()
	})
}

// unlockAll deletes the key on every node where it still holds token. It is
// what both Release and a failed attempt do, on every node whatever its SET
// answered. The nodes that gave no answer are asked again in the background.
func (l *redlockLock) unlockAll(ctx context.Context, key, token string) tally {
	res := l.onEvery(ctx, func(ctx context.Context, node redis.UniversalClient) (bool, error) {
		n, err := compareAndDelete.Run(ctx, node, []string{key}, token).Int64()
		return n > 0, err
	})
	l.chase(ctx, key, token, res.errs)
	return res
}

// chase asks the nodes that did not answer an unlock again, every per-node
// timeout, until each answers or the key has surely expired (a TTL from
// now). An unlock whose reply was lost has run, but one stuck behind a dead
// connection has not, and that key would refuse every other client for the
// rest of its TTL (seed 002). Compare-and-delete is idempotent: asking twice
// is safe. A crashed or paused process asks nothing: its connections fail
// or block at its gate.
func (l *redlockLock) chase(ctx context.Context, key, token string, nodes []int) {
	ctx = context.WithoutCancel(ctx)
	until := time.Now().Add(l.cfg.TTL)
	for _, i := range nodes {
		node := l.cfg.Nodes[i]
		go func() {
			for time.Now().Before(until) {
				if pause(ctx, l.perNode) != nil {
					return
				}
				nctx, cancel := context.WithTimeout(ctx, l.perNode)
				err := compareAndDelete.Run(nctx, node, []string{key}, token).Err()
				cancel()
				if err == nil || errors.Is(err, redis.ErrClosed) {
					return
				}
			}
		}()
	}
}

// Acquire implements Lock.
func (l *redlockLock) Acquire(ctx context.Context, key string) (*Lease, error) {
	lease := &Lease{Key: key, TTL: l.cfg.TTL}
	var until time.Time // end of the validity of the lease won
	// A lost attempt may have held the key on some nodes until its undo
	// (or, where the undo went unanswered, until the TTL): votes that split
	// the others' attempts. The history must say so, or their failures in
	// that time read as a free lock refused.
	var heldFrom, heldTo time.Time
	err := l.retry(ctx, func(ctx context.Context) (bool, error) {
		// A fresh token for every attempt: the undo of a lost attempt may
		// still be chasing a node in the background, and must not delete
		// the key of a later attempt that won.
		lease.Token = l.cfg.NewToken()
		start := time.Now()
		set := l.setAll(ctx, key, lease.Token)
		elapsed := time.Since(start)
		validity := l.cfg.TTL - elapsed - l.drift
		if set.ok >= l.quorum && validity > 0 {
			lease.Validity, until = validity, start.Add(l.cfg.TTL-l.drift)
			return true, nil
		}
		// Too few nodes, or too late: undo the attempt everywhere, also on
		// the nodes that failed or timed out (their SET may have landed).
		if err := l.cfg.Hooks.step(ctx, "redlock-undo"); err != nil {
			return false, err
		}
		undo := l.unlockAll(ctx, key, lease.Token)
		if set.ok > 0 || len(set.errs) > 0 {
			if heldFrom.IsZero() {
				heldFrom = start
			}
			heldTo = time.Now()
			if len(undo.errs) > 0 {
				heldTo = start.Add(l.cfg.TTL)
			}
		}
		// Nodes that may still hold our key: those that did not refuse the
		// SET and did not answer the undo. If they are a majority the lock
		// may be ours until the TTL: the outcome is unknown, not a failure.
		maybe := 0
		for _, i := range undo.errs {
			if set.okAt[i] || contains(set.errs, i) {
				maybe++
			}
		}
		if maybe >= l.quorum {
			return false, fmt.Errorf("redlock %s: attempt undone on too few nodes (%d may still hold it): %w",
				key, maybe, undo.err)
		}
		return false, nil
	})
	if errors.Is(err, ErrNotAcquired) && !heldFrom.IsZero() {
		return nil, &RefusedError{HeldFrom: heldFrom, HeldTo: heldTo, Reason: err.Error() + "; lost attempts held the key on some nodes"}
	}
	if err != nil {
		return nil, err
	}
	if l.watchdog {
		l.startWatchdog(ctx, lease, until)
	}
	return lease, nil
}

// retry runs attempt until it wins, fails, or Config.Wait runs out. Between
// attempts it sleeps a random delay, the published algorithm's way to
// desynchronise clients whose attempts overlapped and split the votes: the
// usual retry delay plus up to twice the last attempt's duration, so that
// when attempts are slow (a node that only times out) the spread grows with
// them instead of every contender coming back together. It keeps the
// steady pace, not the single-node locks' backoff: a retry that splits the
// votes again costs every node a write and an undo.
func (l *redlockLock) retry(ctx context.Context, attempt func(context.Context) (bool, error)) error {
	return retryPaced(ctx, l.cfg, attempt, func(_ int, took time.Duration) time.Duration {
		return l.cfg.retryDelay() + time.Duration(l.cfg.Rand.Int63n(2*int64(took)+1))
	})
}

// startWatchdog extends the lease on every node every TTL/3. An extension
// counts only if a majority extended it before the current validity ran out;
// the new validity starts from when the extension was sent. When a majority
// says the key is no longer ours, or the validity ran out without a
// successful extension, the lease is lost and the watchdog stops.
func (l *redlockLock) startWatchdog(ctx context.Context, lease *Lease, until time.Time) {
	ttl := l.cfg.TTL.Milliseconds()
	startWatchdog(ctx, l.cfg, lease, func(ctx context.Context) (bool, error) {
		start := time.Now()
		if !start.Before(until) {
			return false, nil // too late: the lease already ran out
		}
		ext := l.onEvery(ctx, func(ctx context.Context, node redis.UniversalClient) (bool, error) {
			n, err := compareAndExpire.Run(ctx, node, []string{lease.Key}, lease.Token, ttl).Int64()
			return n > 0, err
		})
		switch {
		case ext.ok >= l.quorum && time.Now().Before(until):
			until = start.Add(l.cfg.TTL - l.drift)
			return true, nil
		case ext.ok+len(ext.errs) >= l.quorum && time.Now().Before(until):
			// Not decided: the next tick tries again while the lease lasts.
			return false, fmt.Errorf("redlock extend %s: %d of %d nodes extended: %w", lease.Key, ext.ok,
				len(l.cfg.Nodes), ext.err)
		}
		return false, nil
	})
}

// Release implements Lock: compare-and-delete on every node (and again, in
// the background, on those that did not answer). The lock is one lease held
// by a majority of keys, so it was deleted when a majority deleted our key.
// Anything less is an unknown outcome, not a "deleted nothing": a node that
// did not answer may have deleted it, and one that answered "not yours" may
// be answering go-redis's retry of a delete whose first reply was lost (the
// first one deleted the key). The token makes deleting another client's key
// impossible.
func (l *redlockLock) Release(ctx context.Context, lease *Lease) (bool, error) {
	lease.StopRenewal()
	if err := l.cfg.Hooks.step(ctx, "release"); err != nil {
		return false, err
	}
	res := l.unlockAll(ctx, lease.Key, lease.Token)
	if res.ok >= l.quorum {
		return true, nil
	}
	err := fmt.Errorf("redlock release %s: deleted on %d of %d nodes, %d said not ours, %d gave no answer",
		lease.Key, res.ok, len(l.cfg.Nodes), res.failed, len(res.errs))
	if res.err != nil {
		err = fmt.Errorf("%w: %w", err, res.err)
	}
	return false, err
}

// neverSent reports whether err proves the command never left: the
// connection to the node could not even be opened (a node that is down, not
// behind a proxy). Any later error may hide a command that ran.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
