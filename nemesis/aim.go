// How faults aim at the lock protocol: reading on the nodes themselves
// which of them hold a live lease, waiting for an acquire whose lease
// suits, and putting a toxic in place as the client's command goes out,
// so that a fault meets a lock in force rather than an idle key.

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
)

// holdsLease asks node n directly (not through any client's proxy) whether
// key holds lease right now; lease "" asks whether it holds any value.
func holdsLease(ctx context.Context, n *cluster.Node, key, lease string) (bool, error) {
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, DisableIdentity: true, PoolSize: 1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	defer c.Close()
	v, err := c.Get(ctx, key).Result()
	if err == redis.Nil {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s on %s: %w", key, n.Name, err)
	}
	return lease == "" || v == lease, nil
}

// leaseHolders returns, in the nodes' order, the nodes on which key holds
// lease (any value when lease is ""); a node that does not answer counts as
// not holding it.
func leaseHolders(ctx context.Context, nodes []*cluster.Node, key, lease string) []*cluster.Node {
	held := make([]bool, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			held[i], _ = holdsLease(ctx, n, key, lease)
		}()
	}
	wg.Wait()
	var out []*cluster.Node
	for i, n := range nodes {
		if held[i] {
			out = append(out, n)
		}
	}
	return out
}

// liveLease waits for an acquire whose lease the nodes hold as want asks
// (given the nodes that hold it), and returns it with those nodes. The
// first acquire it looks at is a seeded client's numbered one; when that
// lease does not suit, it takes the next acquire of any client, until the
// target's patience runs out. With held, it first looks at the leases
// clients hold already.
func liveLease(ctx context.Context, t *Target, rng *rand.Rand, nodes []*cluster.Node, held bool,
	want func(e ProtocolEvent, holders []*cluster.Node) bool) (ProtocolEvent, []*cluster.Node, error) {
	deadline := time.Now().Add(t.patience())
	f := Filter{Kind: Acquired, Client: rng.Intn(t.Clients.Count()), Skip: aimSkip(rng)}
	var missed leaseMisses
	const what = "a live lease held on a node as the fault needs"
	if held {
		for _, e := range t.Protocol.Held() {
			if e.Expires.IsZero() || time.Now().Before(e.Expires) {
				if h := leaseHolders(ctx, nodes, e.StoredKey(), e.Lease); len(h) > 0 && want(e, h) {
					e.Planned = -1 // found, not waited for
					return e, h, nil
				}
				missed.add(e)
			}
		}
	}
	for {
		p := *t
		p.Patience = time.Until(deadline)
		if p.Patience <= 0 {
			return ProtocolEvent{}, nil, missed.wrap(fmt.Errorf("%w: no lease held as needed within %v", ErrNoTarget, t.patience()), what)
		}
		e, err := p.next(ctx, f)
		if err != nil {
			return e, nil, missed.wrap(err, what)
		}
		if e.Lease != "" && (e.Expires.IsZero() || time.Now().Before(e.Expires)) {
			if h := leaseHolders(ctx, nodes, e.StoredKey(), e.Lease); len(h) > 0 && want(e, h) {
				return e, h, nil
			}
			missed.add(e)
		}
		f = Filter{Kind: Acquired, Client: -1}
	}
}

// aimToxic starts a toxic fault at a protocol step: it waits for the event
// f matches and, in the client's goroutine before its command goes out,
// puts the toxic on the paths paths(e) names, so the command in flight is
// the one hit.
func (tf *toxicFault) aimToxic(ctx context.Context, t *Target, f Filter, mark Marker,
	paths func(e ProtocolEvent) ([]*cluster.Path, string)) error {
	var what string
	var applyErr error
	f.Act = func(e ProtocolEvent) {
		ps, w := paths(e)
		what = w
		tf.pick = func(*Target, *rand.Rand) ([]*cluster.Path, string) { return ps, w }
		applyErr = tf.Start(context.WithoutCancel(ctx), t, nil, quiet{})
	}
	e, err := t.next(ctx, f)
	if err != nil {
		return err
	}
	if applyErr != nil {
		return applyErr
	}
	aimed(mark, aimAt(e))
	mark.Began(what + " (" + tf.direction + ")")
	return nil
}

// clientToEveryNode is client c's path to every node it talks to.
func clientToEveryNode(t *Target, c int) ([]*cluster.Path, string) {
	var out []*cluster.Path
	for _, to := range clientNodes(t) {
		out = append(out, t.Network.Paths(ClientName(c), to)...)
	}
	return out, ClientName(c) + " <-> its nodes"
}

// inFlight is the filter of a client's next acquire or, one time in
// three, release: the operations whose replies a network fault aims at.
func inFlight(rng *rand.Rand, client int) Filter {
	kind := Acquiring
	if rng.Intn(3) == 0 {
		kind = Releasing
	}
	return Filter{Kind: kind, Client: client, Skip: aimSkip(rng)}
}

// cutAtFreeAttempt waits for an attempt on a key that no client holds
// and, in the client's goroutine before its command goes out, runs cut:
// the attempt's write, and every one after it, then reaches the master
// only. Cut while a replica keeps a copy of the key, a replica promoted
// later would keep the key taken until that copy expired, up to a TTL
// later, and the loss would show only if a holder still held just then.
// So a cut after which copied(key) still finds a copy (the last
// release's delete had not reached the replica) is undone and made again
// at a later free attempt, within the target's patience; after it, the
// error wraps ErrNoTarget.
func cutAtFreeAttempt(ctx context.Context, t *Target, cut func(ProtocolEvent) error,
	copied func(key string) bool, undo func() error) (ProtocolEvent, error) {
	deadline := time.Now().Add(t.patience())
	for {
		var cutErr error
		f := Filter{Kind: Point, Points: []string{"attempt"}, Client: -1, Free: true,
			Act: func(e ProtocolEvent) { cutErr = cut(e) }}
		p := *t
		p.Patience = time.Until(deadline)
		if p.Patience <= 0 {
			return ProtocolEvent{}, fmt.Errorf("%w: no free attempt left no copy on a replica within %v", ErrNoTarget, t.patience())
		}
		e, err := p.next(ctx, f)
		switch {
		case err != nil:
			return e, err
		case cutErr != nil:
			return e, cutErr
		case !copied(e.StoredKey()):
			return e, nil
		}
		if err := undo(); err != nil {
			return e, err
		}
	}
}

// cutWhileLacking starts cut (a replication cut) at a free attempt on a
// key that none of the nodes has (see cutAtFreeAttempt) and returns the
// key as the lock writes it in Redis; a lock without "attempt" points is
// cut at once, and any key will do. On an error the cut is removed.
func cutWhileLacking(ctx context.Context, t *Target, cut *toxicFault, lacking []*cluster.Node) (string, error) {
	e, err := cutAtFreeAttempt(ctx, t,
		func(ProtocolEvent) error { return cut.Start(context.WithoutCancel(ctx), t, nil, quiet{}) },
		func(key string) bool { return len(leaseHolders(ctx, lacking, key, "")) > 0 },
		func() error { return cut.Heal(context.WithoutCancel(ctx), t) })
	switch {
	case errors.Is(err, ErrNoTarget):
		return "", cut.Start(ctx, t, nil, quiet{})
	case err != nil:
		return "", errors.Join(err, cut.Heal(context.WithoutCancel(ctx), t))
	}
	return e.StoredKey(), nil
}

// leaseWhere finds a live lease on key, as written in Redis (any key when
// it is ""), that the nodes hold as want says: one held already, or the next granted (see
// nextLeaseWhere).
func leaseWhere(ctx context.Context, t *Target, key string, want func(ProtocolEvent) bool) (e ProtocolEvent, found bool, err error) {
	for _, h := range t.Protocol.Held() {
		if h.Lease != "" && (key == "" || h.StoredKey() == key) && (h.Expires.IsZero() || time.Now().Before(h.Expires)) && want(h) {
			h.Planned = -1 // found, not waited for
			return h, true, nil
		}
	}
	return nextLeaseWhere(ctx, t, key, want)
}

// onKey names key in a wait's words: "on KEY", or nothing for any key.
func onKey(key string) string {
	if key == "" {
		return ""
	}
	return " on " + key
}

// nextLeaseWhere waits for the next live lease granted on key (any key
// when it is "") that want accepts. found is false when none came within
// the target's patience, or when no client acquired anything at all for
// twice the blind fault's lead: a lock that grants nothing while
// replication is cut (token-wait refuses unreplicated writes) does that,
// and it still faces the failover it exists to survive.
func nextLeaseWhere(ctx context.Context, t *Target, key string, want func(ProtocolEvent) bool) (e ProtocolEvent, found bool, err error) {
	deadline := time.Now().Add(t.patience())
	var missed leaseMisses
	for {
		p := *t
		p.Patience = min(time.Until(deadline), 2*lead(t.TTL))
		if p.Patience <= 0 {
			return e, false, nil
		}
		e, err = p.next(ctx, Filter{Kind: Acquired, Client: -1})
		switch {
		case errors.Is(err, ErrNoTarget):
			return e, false, nil
		case err != nil:
			return e, false, missed.wrap(err, "a live lease"+onKey(key)+" held on the nodes as the fault needs")
		case e.Lease == "" || key != "" && e.StoredKey() != key || !e.Expires.IsZero() && !time.Now().Before(e.Expires):
			continue
		case want(e):
			return e, true, nil
		}
		missed.add(e)
	}
}
