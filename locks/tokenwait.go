package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// tokenWaitLock is the token lock followed by WAIT 1: the acquire counts only
// once at least one replica has acknowledged the lock key, within a short
// timeout; with fewer acknowledgements the attempt failed and the key is
// given back by compare-and-delete. This is Redisson's answer to failover in
// its simplest form: its lock, by default, follows the lock write with WAIT
// for the replicas (checkLockSyncedSlaves, slavesSyncTimeout) and fails the
// acquire when they did not acknowledge it.
//
// What it narrows: a failover right after an acquire returned no longer
// finds every replica without the key. Replication delayed or cut at the
// moment of the write now costs failed acquires instead of a second holder.
//
// What it cannot close, which is what it exists to show:
//   - WAIT counts any replica, and Sentinel may promote another one (the one
//     that acknowledged may be down, cut off from the Sentinels or less
//     preferred): the key is lost all the same;
//   - during a failover the old master still accepts writes from clients that
//     have not heard of the switch, and a replica not yet re-pointed still
//     acknowledges them; both are discarded when the old master is demoted;
//   - an acknowledgement is not durability: a replica restarted without
//     persistence forgets the key;
//   - none of it helps a holder that pauses past its TTL.
type tokenWaitLock struct {
	cfg  Config
	wait time.Duration
}

// replicaAckTimeout is how long an acquire waits for a replica: a tenth of
// the TTL and at most 100 ms, so that the lease is not spent waiting, and at
// least a millisecond (WAIT with 0 would block forever).
func replicaAckTimeout(ttl time.Duration) time.Duration {
	return max(min(ttl/10, 100*time.Millisecond), time.Millisecond)
}

var newTokenWait = leased("token-wait", func(cfg Config) Lock { return &tokenWaitLock{cfg: cfg, wait: replicaAckTimeout(cfg.TTL)} })

func (l *tokenWaitLock) Acquire(ctx context.Context, key string) (*Lease, error) {
	lease := &Lease{Key: key, Token: l.cfg.NewToken(), TTL: l.cfg.TTL}
	unacked := 0
	var heldFrom, heldTo time.Time // the key was ours, unacknowledged, within these
	err := retry(ctx, l.cfg, func(ctx context.Context) (bool, error) {
		sent := time.Now()
		ok, err := l.attempt(ctx, key, lease.Token)
		if errors.Is(err, errUnreplicated) {
			if unacked == 0 {
				heldFrom = sent
			}
			unacked++
			heldTo = time.Now()
			return false, nil
		}
		return ok, err
	})
	if errors.Is(err, ErrNotAcquired) && unacked > 0 {
		// Refused, but the key was ours while we waited for replicas: the
		// others' failures in that time are no spurious failures.
		return nil, &RefusedError{HeldFrom: heldFrom, HeldTo: heldTo,
			Reason: fmt.Sprintf("%d attempt(s) set the key but no replica acknowledged it within %v", unacked, l.wait)}
	}
	if err != nil {
		return nil, err
	}
	return lease, nil
}

var errUnreplicated = errors.New("lock key not acknowledged by a replica")

// attempt sends SET NX PX and WAIT 1 in one pipeline: WAIT counts the
// replicas that acknowledged this connection's writes, so it must follow
// the SET on the same connection.
func (l *tokenWaitLock) attempt(ctx context.Context, key, token string) (bool, error) {
	c := l.cfg.Nodes[0]
	var set *redis.BoolCmd
	var acks *redis.Cmd
	_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = p.SetNX(ctx, key, token, l.cfg.TTL)
		acks = p.Do(ctx, "WAIT", 1, l.wait.Milliseconds())
		return nil
	})
	ok, err := set.Result()
	if err != nil || !ok {
		return false, err
	}
	if n, err := acks.Int64(); err == nil && n >= 1 {
		return true, nil
	}
	// The key is on the master only (or we cannot tell): a failover now
	// would hand it to someone else, so it is not a lock. Give it back.
	if err := l.cfg.Hooks.step(ctx, "unreplicated"); err != nil {
		return false, err
	}
	if err := compareAndDelete.Run(ctx, c, []string{key}, token).Err(); err != nil {
		return false, fmt.Errorf("give back unreplicated lock %s: %w", key, err)
	}
	return false, errUnreplicated
}

func (l *tokenWaitLock) Release(ctx context.Context, lease *Lease) (bool, error) {
	return releaseToken(ctx, l.cfg, lease)
}
