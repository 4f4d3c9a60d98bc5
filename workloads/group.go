package workloads

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/nemesis"
)

// group is the clients that share one lock object (--share), as the
// threads of one process share a library's lock: the most reported bug
// class of real lock libraries (one thread's release deleting the lock
// another thread holds, a second acquire on the same object succeeding
// while the first holds) shows only there. The group's clients use one
// gate, so a pause or crash aimed at any of them stops them all, as a
// SIGSTOP or SIGKILL stops every thread; they use one lock, built by the
// usual Factory over the connections of the group's first client. Each
// keeps its own client number and process ids in the history.
type group struct {
	r       *Runner
	clients []int
	rng     *rand.Rand // seeds each incarnation's lock; guarded by mu

	mu    sync.Mutex
	cur   *instance // the live incarnation; nil before the first
	count int       // incarnations so far
}

// instance is one incarnation of a group's process: its gate, lock and
// connections, until the last of its clients leaves it.
type instance struct {
	g         *group
	n         int // which incarnation of the group
	gate      *Gate
	lock      locks.Lock
	nodes     []redis.UniversalClient
	tokens    atomic.Int64
	lastToken atomic.Value // string: the latest token the lock asked for
	members   int          // clients in it; guarded by g.mu
}

// newGroups cuts r's clients into groups of cfg.Share; nil when each
// client has a lock of its own.
func newGroups(r *Runner) []*group {
	k := r.cfg.Share
	if k <= 1 {
		return nil
	}
	var out []*group
	for first := 0; first < r.cfg.Clients; first += k {
		g := &group{r: r, rng: rand.New(rand.NewSource(r.cfg.Seed*1_000_003 - int64(first+1)*104_729))}
		for c := first; c < min(first+k, r.cfg.Clients); c++ {
			g.clients = append(g.clients, c)
		}
		out = append(out, g)
	}
	return out
}

// groupOf is client c's group, nil when it shares its lock with no one.
func (r *Runner) groupOf(c int) *group {
	if r.groups == nil {
		return nil
	}
	return r.groups[c/r.cfg.Share]
}

// join puts p in the group's live incarnation, starting a fresh one when
// the last died (a crash retires all the group's clients, and a fresh
// shared lock takes their place).
func (g *group) join(p *Process) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cur == nil || g.cur.dead() {
		in, err := g.start()
		if err != nil {
			return err
		}
		g.cur = in
	}
	g.cur.members++
	p.shared, p.Gate, p.Lock, p.Nodes = g.cur, g.cur.gate, g.cur.lock, g.cur.nodes
	return nil
}

// start builds a fresh incarnation; g.mu is held.
func (g *group) start() (*instance, error) {
	g.count++
	in := &instance{g: g, n: g.count, gate: NewGate()}
	in.lastToken.Store("")
	if g.r.cfg.Observe != nil {
		in.gate.observe = func(ctx context.Context, point string) {
			if p, _ := ctx.Value(procKey{}).(*Process); p != nil {
				p.observe(nemesis.ProtocolEvent{Kind: nemesis.Point, Point: point, Unawaited: locks.IsUnawaited(ctx)})
			}
		}
	}
	lk, nodes, err := g.r.build(g.clients[0], in.gate, g.rng, in.newToken, in.renew, g.clients)
	if err != nil {
		return nil, fmt.Errorf("clients %v sharing a lock: %w", g.clients, err)
	}
	in.lock, in.nodes = lk, nodes
	return in, nil
}

func (in *instance) dead() bool {
	select {
	case <-in.gate.Dead():
		return true
	default:
		return false
	}
}

// newToken is the shared lock's Config.NewToken: unique across the run,
// named by the group's first client and the incarnation.
func (in *instance) newToken() string {
	t := fmt.Sprintf("c%d-s%d-%d", in.g.clients[0], in.n, in.tokens.Add(1))
	in.lastToken.Store(t)
	return t
}

// renew records a renewal of the shared lock under the client that holds
// the lease (the group's first client when none is known: a renewal must
// not go unrecorded, or the lease would look expired).
func (in *instance) renew(l *locks.Lease) func(error) {
	r := in.g.r
	c, ok := r.holderOf(l.Key, l.Token)
	if !ok {
		c = in.g.clients[0]
	}
	p := r.Current(c)
	if p == nil || p.shared != in {
		return func(error) {}
	}
	return p.renewHook()(l)
}

// leave takes p out of its incarnation. A process that died (a crash, an
// abandon, an error) takes the whole incarnation with it, as one thread's
// kill -9 is the process's; the last to leave closes the lock and the
// connections.
func (g *group) leave(p *Process, died bool) {
	in := p.shared
	if died {
		in.gate.Crash()
	}
	g.mu.Lock()
	in.members--
	last := in.members == 0
	g.mu.Unlock()
	if last {
		g.r.end(p.Client, in.gate, in.lock, in.nodes)
	}
}

// holderOf is the client that holds lease on key, as the status line
// tracks it.
func (r *Runner) holderOf(key, lease string) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.holders[key][lease]
	return c, ok
}

// procKey marks an operation's context with its *Process, so that a gate
// shared by several clients reports a step under the one that took it.
type procKey struct{}

// lockedSource is a math/rand source safe for the concurrent use of a
// lock shared by several clients.
type lockedSource struct {
	mu  sync.Mutex
	src rand.Source64
}

func (s *lockedSource) Int63() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src.Int63()
}

func (s *lockedSource) Uint64() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src.Uint64()
}

func (s *lockedSource) Seed(seed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.src.Seed(seed)
}
