// How an aimed failover-lossy picks the moment clients move to the new
// master: the promotion is held back until a grant on the old master.

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/sleep"
)

// switchAtGrant holds back the news of the promotion (HoldSwitch: the
// promoted replica is stopped once it has taken over, so Sentinel cannot
// read that it has) until the old master grants a lock the replicas lack to a
// holder that means to hold it a while, so that clients move to the new
// master while that holder holds: the first to try there wins. Left to
// Sentinel, the switch comes about a second after the failover was asked
// for, at whatever moment the lock is in then, and a holder that lets go
// before any waiter's next try takes the key again itself on the new
// master, often enough to miss one failover in three. Sentinel reads the
// promoted replica a second after sent, so a switch let go earlier would
// come no sooner: the grant is waited for from then on, a holder that means
// to hold at least reach(TTL) for the first half of a second, any after
// it; with none, the switch is let go at the end.
func switchAtGrant(ctx context.Context, t *Target, ft cluster.FailoverTopology, old *cluster.Node,
	replicas []*cluster.Node, leader int, mark Marker, sent time.Time) error {
	frozen, err := frozenKeys(ctx, replicas)
	if err != nil {
		return err
	}
	resume, err := ft.HoldSwitch(ctx, leader)
	if err != nil {
		return err
	}
	defer resume()
	if !sleep.For(ctx, time.Until(sent.Add(switchDue))) {
		return ctx.Err()
	}
	p := *t
	p.Patience = switchWait
	picky := time.Now().Add(switchWait / 2)
	e, found, err := nextLeaseWhere(ctx, &p, "", func(e ProtocolEvent) bool {
		if e.Hold > 0 && e.Hold < reach(t.TTL) && time.Now().Before(picky) {
			return false // released before a waiter could try
		}
		exp, held := frozen[e.StoredKey()]
		return (!held || !exp.IsZero() && time.Now().After(exp)) &&
			len(leaseHolders(ctx, []*cluster.Node{old}, e.StoredKey(), e.Lease)) == 1
	})
	if rerr := resume(); rerr != nil || err != nil {
		return errors.Join(err, rerr)
	}
	if found {
		mark.Step(fmt.Sprintf("the promotion announced right after %s granted %s's lock", old.Name, ClientName(e.Client)))
	}
	return nil
}

// When switchAtGrant lets the switch go: from a second after the failover
// was asked for (when Sentinel would have let it go itself), at a grant
// within switchWait after that.
const (
	switchDue  = time.Second
	switchWait = time.Second
)

// frozenKeys reads the keys the replicas hold and when they expire (zero:
// never), the latest of any replica's copy. Replication from the master is
// cut, so nothing but expiry changes them until the failover ends; the
// promoted replica, stopped while its promotion is held back, cannot be
// read then.
func frozenKeys(ctx context.Context, replicas []*cluster.Node) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	for _, n := range replicas {
		c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, DisableIdentity: true, PoolSize: 1,
			DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
		err := func() error {
			defer c.Close()
			iter := c.Scan(ctx, 0, "*", 1000).Iterator()
			for iter.Next(ctx) {
				key := iter.Val()
				ttl, err := c.PTTL(ctx, key).Result()
				switch {
				case err != nil:
					return err
				case ttl == -2: // gone since
					continue
				case ttl < 0:
					out[key] = time.Time{}
				default:
					if exp, ok := out[key]; !ok || !exp.IsZero() && exp.Before(time.Now().Add(ttl)) {
						out[key] = time.Now().Add(ttl)
					}
				}
			}
			return iter.Err()
		}()
		if err != nil {
			return nil, fmt.Errorf("read the keys of %s: %w", n.Name, err)
		}
	}
	return out, nil
}
