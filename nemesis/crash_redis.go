// The crash-redis fault: a redis-server killed and restarted, which loses
// the locks it held unless its persistence kept them, with its entry and
// its downtime setting.

package nemesis

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/sleep"
	"github.com/locktorture/locktorture/settings"
)

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

// nameCrashRedis is the fault's one name: its entry's and its own.
const nameCrashRedis = "crash-redis"

// crashRedisEntry is the registry entry of crash-redis, with the settings it reads.
func crashRedisEntry() Entry {
	return Entry{Name: nameCrashRedis,
		Summary:  "SIGKILL a redis-server and restart it on the same port (persistence as chosen)",
		New:      newCrashRedis,
		Settings: []settings.Setting{setDowntime()}}
}

// setDowntime is how long crash-redis keeps its node down.
func setDowntime() settings.Setting {
	return settings.Setting{Name: "downtime", Kind: settings.Duration, Default: "0s",
		Help: "how long crash-redis keeps a node down before restarting it"}
}

func newCrashRedis(o Options) Fault {
	return &crashRedis{persistence: cluster.Persistence(o.String("persistence")), downtime: o.Duration("downtime")}
}

func (f *crashRedis) Name() string              { return nameCrashRedis }
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
