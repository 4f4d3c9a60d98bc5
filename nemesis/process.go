package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/locktorture/locktorture/cluster"
)

func pickNode(t *Target, rng *rand.Rand) (*cluster.Node, error) {
	if t.Topology == nil || len(t.Topology.Nodes()) == 0 {
		return nil, errors.New("no redis node to act on")
	}
	nodes := t.Topology.Nodes()
	return nodes[rng.Intn(len(nodes))], nil
}

func needNodes(t *Target) error {
	if t.Topology == nil || len(t.Topology.Nodes()) == 0 {
		return errors.New("needs redis-server processes the harness started")
	}
	return nil
}

// pauseRedis freezes a redis-server with SIGSTOP: it keeps its sockets and
// its keys but answers nothing, and its clock-driven expiry stops too, while
// the clients' leases run out on their own clocks.
type pauseRedis struct{ node *cluster.Node }

func newPauseRedis(Options) Fault { return &pauseRedis{} }

func (f *pauseRedis) Name() string              { return "pause-redis" }
func (f *pauseRedis) Available(t *Target) error { return needNodes(t) }

func (f *pauseRedis) Start(ctx context.Context, t *Target, rng *rand.Rand) (string, error) {
	n, err := pickNode(t, rng)
	if err != nil {
		return "", err
	}
	if err := n.Pause(); err != nil {
		return "", err
	}
	f.node = n
	return n.Name, nil
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
// and a second client acquires within the first one's lease.
type crashRedis struct {
	persistence cluster.Persistence
	downtime    time.Duration
	node        *cluster.Node
}

func newCrashRedis(o Options) Fault {
	return &crashRedis{persistence: o.Persistence, downtime: o.Downtime}
}

func (f *crashRedis) Name() string              { return "crash-redis" }
func (f *crashRedis) Available(t *Target) error { return needNodes(t) }

func (f *crashRedis) Start(ctx context.Context, t *Target, rng *rand.Rand) (string, error) {
	n, err := pickNode(t, rng)
	if err != nil {
		return "", err
	}
	if f.persistence != "" {
		n.SetPersistence(f.persistence)
	}
	if err := n.Kill(); err != nil {
		return "", err
	}
	f.node = n
	if f.downtime > 0 && !wait(ctx, f.downtime) {
		return n.Name, nil // Heal restarts it
	}
	if err := n.Restart(context.WithoutCancel(ctx)); err != nil {
		return "", fmt.Errorf("restart %s: %w", n.Name, err)
	}
	return fmt.Sprintf("%s (restarted, persistence %s)", n.Name, n.Persistence), nil
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
type pauseClient struct{ gate Gate }

func newPauseClient(Options) Fault { return &pauseClient{} }

func (f *pauseClient) Name() string { return "pause-client" }

func (f *pauseClient) Available(t *Target) error {
	if t.Clients == nil {
		return errors.New("needs clients")
	}
	return nil
}

func (f *pauseClient) Start(ctx context.Context, t *Target, rng *rand.Rand) (string, error) {
	c := rng.Intn(t.Clients.Count())
	g := t.Clients.Gate(c)
	if g == nil {
		return "", fmt.Errorf("client %d has no live process", c)
	}
	g.Pause()
	f.gate = g
	return ClientName(c), nil
}

func (f *pauseClient) Heal(ctx context.Context, t *Target) error {
	if f.gate != nil {
		f.gate.Resume()
		f.gate = nil
	}
	return nil
}

// crashClient kills one client at a random point of the lock protocol: a
// point chosen among those the process has passed (between SETNX and PEXPIRE
// included), where it dies the next time it gets there. It never releases what
// it holds; a fresh client takes its place.
type crashClient struct{}

func newCrashClient(Options) Fault { return crashClient{} }

func (crashClient) Name() string { return "crash-client" }

func (crashClient) Available(t *Target) error {
	if t.Clients == nil {
		return errors.New("needs clients")
	}
	return nil
}

func (crashClient) Start(ctx context.Context, t *Target, rng *rand.Rand) (string, error) {
	c := rng.Intn(t.Clients.Count())
	g := t.Clients.Gate(c)
	if g == nil {
		return "", fmt.Errorf("client %d has no live process", c)
	}
	points := g.Points()
	if len(points) == 0 {
		g.CrashAt("attempt")
		return ClientName(c) + " (at its next attempt)", nil
	}
	p := points[rng.Intn(len(points))]
	g.CrashAt(p)
	return fmt.Sprintf("%s (at its next %s)", ClientName(c), p), nil
}

func (crashClient) Heal(context.Context, *Target) error { return nil }

// Instant implements Instant: the crash is over once it is scheduled.
func (crashClient) Instant() bool { return true }
