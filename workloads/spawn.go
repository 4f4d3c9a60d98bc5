package workloads

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/nemesis"
)

// spawn starts an incarnation of client c: its own gate, connections and
// lock, or its place in its group's (see group), connected before it works.
func (r *Runner) spawn(ctx context.Context, c int, rng *rand.Rand) (*Process, error) {
	p := &Process{Client: c, Rand: rand.New(rand.NewSource(rng.Int63())), r: r}
	p.id.Store(int64(r.newProcessID()))
	p.lastToken.Store("")
	var err error
	if g := r.groupOf(c); g != nil {
		err = g.join(p)
	} else {
		err = r.own(p, rng)
	}
	if err != nil {
		return nil, err
	}
	warm(ctx, p.Nodes)
	r.mu.Lock()
	r.current[c] = p
	r.mu.Unlock()
	return p, nil
}

// own gives p a gate, connections and lock of its own: a client that
// shares its lock object with no other.
func (r *Runner) own(p *Process, rng *rand.Rand) error {
	p.Gate = NewGate()
	if r.cfg.Observe != nil {
		p.Gate.observe = func(ctx context.Context, point string) {
			p.observe(nemesis.ProtocolEvent{Kind: nemesis.Point, Point: point, Unawaited: locks.IsUnawaited(ctx)})
		}
	}
	newToken := func() string {
		p.tokens++
		t := fmt.Sprintf("c%d-p%d-%d", p.Client, p.ID(), p.tokens)
		p.lastToken.Store(t)
		return t
	}
	lk, nodes, err := r.build(p.Client, p.Gate, rng, newToken, p.renewHook(), nil)
	if err != nil {
		return err
	}
	p.Lock, p.Nodes = lk, nodes
	return nil
}

// warmBound bounds a new process's first PING to each of its nodes: ample
// for a dial through the proxies of a busy machine, and short where a node
// is paused or cut off (the process then starts as it would have, its
// first command finding the fault).
const warmBound = 250 * time.Millisecond

// warm opens a new process's connections before its first operation, as an
// application connects at start-up: a lock whose per-node timeout is a few
// tens of milliseconds (Redlock's, a tenth of the TTL) would otherwise
// spend it on the dial through the fault proxies, and on a busy machine
// with many clients and nodes every fresh process would fail its every
// attempt, each failure making a fresh process again. Errors are left to
// the operations: a node down now may be back by then.
func warm(ctx context.Context, nodes []redis.UniversalClient) {
	ctx, cancel := context.WithTimeout(ctx, warmBound)
	defer cancel()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = n.Ping(ctx).Err()
		}()
	}
	wg.Wait()
}

// build opens client c's connections through gate and builds a lock over
// them, for clients (nil: c alone). rng seeds the lock.
func (r *Runner) build(c int, gate *Gate, rng *rand.Rand, newToken func() string,
	renew func(*locks.Lease) func(error), clients []int) (locks.Lock, []redis.UniversalClient, error) {
	nodes, err := r.cfg.Connect(c, gate)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	// Attempts and lease starts come from the wire, whatever the lock
	// calls its protocol points (see StampSends).
	StampSends(nodes)
	lc := r.cfg.LockConfig
	lc.Nodes = nodes
	if r.cfg.Dial != nil {
		lc.Dial = r.cfg.Dial(c, gate)
	}
	if r.cfg.Routes != nil {
		lc.Routes = r.cfg.Routes(c)
	}
	lc.Client, lc.Clients = c, clients
	if clients == nil {
		lc.Rand = rand.New(rand.NewSource(rng.Int63()))
	} else {
		// Its clients call it at once: math/rand's sources are not
		// safe for that.
		lc.Rand = rand.New(&lockedSource{src: rand.NewSource(rng.Int63()).(rand.Source64)})
	}
	lc.NewToken = newToken
	lc.Hooks = locks.Hooks{Step: gate.Step, Renew: renew, Sent: sentHook, Armed: r.armed(c, gate)}
	lk, err := r.cfg.Lock(lc)
	if err != nil {
		closeAll(nodes)
		return nil, nil, fmt.Errorf("build lock: %w", err)
	}
	if s, ok := lk.(Signaled); ok {
		gate.Attach(s)
	}
	return lk, nodes, nil
}

// armed is locks.Hooks.Armed of a lock built for client c (the first of
// its group) over gate: a fault may act at the next step of the client
// calling when the gate has a crash or pause coming, or a fault waits for
// that client's step.
func (r *Runner) armed(c int, gate *Gate) func(ctx context.Context) bool {
	return func(ctx context.Context) bool {
		if gate.Armed() {
			return true
		}
		if r.cfg.Armed == nil {
			return false
		}
		client := c
		if n, ok := locks.ClientFrom(ctx); ok {
			client = n // a group's client calling its shared lock
		}
		return r.cfg.Armed(client)
	}
}

// end stops what still runs in a dead process (a watchdog), closes its lock
// and its connections (its keys stay in Redis, as after kill -9).
func (r *Runner) end(client int, gate *Gate, lk locks.Lock, nodes []redis.UniversalClient) {
	gate.Crash()
	if c, ok := lk.(locks.Closer); ok {
		if err := c.Close(); err != nil {
			r.cfg.Logf("client %d: close lock: %v", client, err)
		}
	}
	closeAll(nodes)
}
