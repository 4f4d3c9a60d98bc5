// The pause-redis fault: a redis-server frozen with SIGSTOP, whose expiry
// stops while the clients' leases run out on their own clocks, with its
// entry.

package nemesis

import (
	"context"
	"math/rand"

	"github.com/locktorture/locktorture/cluster"
)

// pauseRedis freezes a redis-server with SIGSTOP: it keeps its sockets and
// its keys but answers nothing, and its clock-driven expiry stops too, while
// the clients' leases run out on their own clocks. Aimed, it freezes the
// node holding a live lease right after the acquire (see aimNode).
type pauseRedis struct{ node *cluster.Node }

// namePauseRedis is the fault's one name: its entry's and its own.
const namePauseRedis = "pause-redis"

// pauseRedisEntry is the registry entry of pause-redis, which reads no settings of its own.
func pauseRedisEntry() Entry {
	return Entry{Name: namePauseRedis,
		Summary: "SIGSTOP a redis-server, SIGCONT at heal",
		New:     newPauseRedis}
}

func newPauseRedis(Options) Fault { return &pauseRedis{} }

func (f *pauseRedis) Name() string              { return namePauseRedis }
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
