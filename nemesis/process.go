package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/sleep"
)

func pickNode(t *Target, rng *rand.Rand) (*cluster.Node, error) {
	if t.Topology == nil || len(t.Topology.Nodes()) == 0 {
		return nil, errors.New("no redis node to act on")
	}
	nodes := t.Topology.Nodes()
	return nodes[rng.Intn(len(nodes))], nil
}

// aimNode picks the node a process or clock fault acts on. Aimed (the
// default), it is a node that holds a live lease, right after the acquire
// that wrote it (the step chosen from the seed), so that what the fault does
// to the node meets a lock in force; blind, any node.
func aimNode(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) (*cluster.Node, error) {
	n, err := pickNode(t, rng)
	if err != nil || !t.aiming() || t.Clients == nil || t.Clients.Count() == 0 {
		return n, err
	}
	e, holders, err := liveLease(ctx, t, rng, t.Topology.Nodes(), true, func(ProtocolEvent, []*cluster.Node) bool { return true })
	if err != nil {
		return nil, err
	}
	n = holders[rng.Intn(len(holders))]
	a := aimAt(e)
	a.Node = n.Name
	aimed(mark, a)
	return n, nil
}

func needNodes(t *Target) error {
	if t.Topology == nil || len(t.Topology.Nodes()) == 0 {
		return errors.New("needs redis-server processes the harness started")
	}
	for _, n := range t.Topology.Nodes() {
		if err := n.Control(); err != nil {
			return err
		}
	}
	return nil
}

// pauseRedis freezes a redis-server with SIGSTOP: it keeps its sockets and
// its keys but answers nothing, and its clock-driven expiry stops too, while
// the clients' leases run out on their own clocks. Aimed, it freezes the
// node holding a live lease right after the acquire (see aimNode).
type pauseRedis struct{ node *cluster.Node }

func newPauseRedis(Options) Fault { return &pauseRedis{} }

func (f *pauseRedis) Name() string              { return "pause-redis" }
func (f *pauseRedis) Available(t *Target) error { return needNodes(t) }

// Aims implements Aiming.
func (f *pauseRedis) Aims() bool { return true }

func (f *pauseRedis) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	n, err := aimNode(ctx, t, rng, mark)
	if err != nil {
		return err
	}
	if err := n.Pause(); err != nil {
		return err
	}
	f.node = n
	mark.Began(n.Name)
	return nil
}

func (f *pauseRedis) Heal(ctx context.Context, t *Target) error {
	if f.node == nil {
		return nil
	}
	err := f.node.Resume()
	f.node = nil
	return err
}

// crashRedis kills a redis-server with SIGKILL and starts it again on the
// same port. What the restarted node still knows depends on its persistence:
// with none, every lock it held is gone while the holders' leases still run,
// and a second client acquires within the first one's lease. Aimed, it
// kills the node holding a live lease right after the acquire (see
// aimNode), so there is always a lock to lose.
type crashRedis struct {
	persistence cluster.Persistence
	downtime    time.Duration
	node        *cluster.Node
}

func newCrashRedis(o Options) Fault {
	return &crashRedis{persistence: cluster.Persistence(o.String("persistence")), downtime: o.Duration("downtime")}
}

func (f *crashRedis) Name() string              { return "crash-redis" }
func (f *crashRedis) Available(t *Target) error { return needNodes(t) }

// Aims implements Aiming.
func (f *crashRedis) Aims() bool { return true }

func (f *crashRedis) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	n, err := aimNode(ctx, t, rng, mark)
	if err != nil {
		return err
	}
	if f.persistence != "" {
		n.SetPersistence(f.persistence)
	}
	if err := n.Kill(); err != nil {
		return err
	}
	f.node = n
	mark.Began(fmt.Sprintf("%s (killed, persistence %s)", n.Name, n.Persistence))
	if f.downtime > 0 && !sleep.For(ctx, f.downtime) {
		return nil // Heal restarts it
	}
	if err := n.Restart(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("restart %s: %w", n.Name, err)
	}
	mark.Step(n.Name + " restarted")
	return nil
}

// Heal makes sure the node runs again.
func (f *crashRedis) Heal(ctx context.Context, t *Target) error {
	n := f.node
	f.node = nil
	if n == nil || n.Pid() != 0 {
		return nil
	}
	return n.Restart(ctx)
}

// pauseClient stops one client the way a long GC pause or SIGSTOP would: its
// loop, its watchdog and its connections all stop, also between sending a
// command and reading the reply, while its lease runs out in Redis. When it
// resumes it goes on as if it still held the lock.
//
// Aimed (the default), it stops a client (seeded) right after one of its
// acquires (the step numbered from the seed), before its work begins, and
// keeps it stopped until its lease has expired and a margin has passed for
// another client to take the key: every lease lock shows two holders, the
// paused one past its lease. Blind, it stops a random client wherever it is.
type pauseClient struct {
	gate  Gate
	until time.Time // an aimed pause lasts at least until then
}

func newPauseClient(Options) Fault { return &pauseClient{} }

func (f *pauseClient) Name() string { return "pause-client" }

// Aims implements Aiming.
func (f *pauseClient) Aims() bool { return true }

func (f *pauseClient) Available(t *Target) error {
	if t.Clients == nil {
		return errors.New("needs clients")
	}
	return nil
}

// outlive is how long past a lease's expiry an aimed pause lasts: time for
// a waiting client to retry and win the key.
func outlive(ttl time.Duration) time.Duration { return max(ttl/2, 50*time.Millisecond) }

func (f *pauseClient) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	c := rng.Intn(t.Clients.Count())
	if t.aiming() {
		var paused time.Time
		e, err := t.next(ctx, Filter{Kind: Acquired, Client: c, Skip: aimSkip(rng), Act: func(e ProtocolEvent) {
			e.Gate.Pause() // before the client's work begins
			paused = time.Now()
			aimed(mark, aimAt(e))
			mark.Began(fmt.Sprintf("%s (paused holding %s until %v past its lease)", ClientName(e.Client), e.Key, outlive(t.TTL)))
		}})
		if err != nil {
			return err
		}
		f.gate = e.Gate
		// Past the lease by the client's own clock too: a watchdog that
		// renewed just before the pause keeps the key a TTL longer.
		ttl := e.TTL
		if ttl <= 0 {
			ttl = t.TTL
		}
		f.until = paused.Add(ttl + outlive(t.TTL))
		return nil
	}
	g := t.Clients.Gate(c)
	if g == nil {
		return fmt.Errorf("client %d has no live process", c)
	}
	g.Pause()
	f.gate, f.until = g, time.Time{}
	mark.Began(ClientName(c))
	return nil
}

// Heal resumes the client, not before an aimed pause has outlived the lease.
func (f *pauseClient) Heal(ctx context.Context, t *Target) error {
	if f.gate == nil {
		return nil
	}
	sleep.For(ctx, time.Until(f.until))
	f.gate.Resume()
	f.gate = nil
	return nil
}

// crashClient kills one client inside its lock protocol, where it never
// releases what it holds; a fresh client takes its place.
//
// Aimed (the default), two starts in three (the first, the second, the
// fourth...) kill a client between the commands of its protocol (the
// points the lock reports beyond the workload's own: between SETNX and
// PEXPIRE, after the fencing INCR...), if the lock has any: once a seeded
// client's numbered acquire has shown which points there are, the next
// client to reach the chosen one dies there. That is the crash a lock
// without atomic acquire cannot survive, so a run meets it from its first
// start on, not when a seed is lucky. The third start, and every start on a
// lock without such points, kills the seeded client as a holder, at its
// numbered hold: the crash a lease must survive. Blind, it picks a point
// among those the process has passed, where it dies the next time it gets
// there.
type crashClient struct{ starts int }

func newCrashClient(Options) Fault { return &crashClient{} }

func (*crashClient) Name() string { return "crash-client" }

// Aims implements Aiming.
func (*crashClient) Aims() bool { return true }

func (*crashClient) Available(t *Target) error {
	if t.Clients == nil {
		return errors.New("needs clients")
	}
	return nil
}

// workloadPoints are the protocol points every process passes whatever its
// lock: the waits and steps of the workload and the generic retry loop.
var workloadPoints = map[string]bool{"attempt": true, "wait": true, "hold": true, "work-done": true,
	"release": true, "watchdog": true}

// midPoints are the points of the lock's own protocol, between two of its
// commands, that the run's clients have reached.
func midPoints(t *Target) []string {
	var out []string
	for _, p := range t.Protocol.Points() {
		if !workloadPoints[p] {
			out = append(out, p)
		}
	}
	return out
}

func (f *crashClient) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	c := rng.Intn(t.Clients.Count())
	if t.aiming() {
		skip, between, pick := aimSkip(rng), f.starts%3 != 2, rng.Int()
		f.starts++
		how := "holding its lease"
		aim := Filter{Kind: Point, Client: c, Skip: skip, Points: []string{"hold"},
			Act: func(e ProtocolEvent) {
				// Marked first: the client records its crash as it dies.
				aimed(mark, aimAt(e))
				mark.Began(fmt.Sprintf("%s (killed at %s, %s)", ClientName(e.Client), e.Point, how))
				e.Gate.Crash()
			}}
		if between {
			// Its numbered acquire first, then the next point between
			// two commands of its protocol: which points the lock has
			// is known once the client has gone through it.
			if _, err := t.next(ctx, Filter{Kind: Acquired, Client: c, Skip: skip}); err != nil {
				return err
			}
			if mids := midPoints(t); len(mids) > 0 {
				how = "between the commands of its protocol"
				aim.Client, aim.Skip, aim.Points, aim.Next = -1, 0, []string{mids[pick%len(mids)]}, true
			}
		}
		_, err := t.next(ctx, aim)
		return err
	}
	g := t.Clients.Gate(c)
	if g == nil {
		return fmt.Errorf("client %d has no live process", c)
	}
	p := "attempt"
	if points := g.Points(); len(points) > 0 {
		p = points[rng.Intn(len(points))]
	}
	g.CrashAt(p)
	// The crash itself is recorded by the client when it reaches the point.
	mark.Began(fmt.Sprintf("%s (at its next %s)", ClientName(c), p))
	return nil
}

func (*crashClient) Heal(context.Context, *Target) error { return nil }

// Instant implements Instant: the crash is over once it is scheduled.
func (*crashClient) Instant() bool { return true }
