// The clock-jump-partition fault: the clock-jump half of the Redlock debate,
// a partition and a clock jump together leaving a holder's lease on a
// minority of the masters, with its entry.

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/settings"
)

// clockJumpPartition is the clock-jump half of the Redlock debate: a client
// cut off from a minority of the masters wins the lock on the others only; then
// the clock of one of those jumps forward and drops its key, so the holder
// now has fewer than a majority of keys while its lease runs, and another
// client wins the dropped node plus the minority the first one could not
// reach: two holders within the lease. A jump on one node alone, or a
// partition alone, leaves Redlock safe.
//
// At start it cuts one client (seeded) from a minority of the masters that
// excludes one node (seeded), then jumps that node's clock forward by more
// than the TTL every TTL/4 while the fault lasts: the first jump only once
// the cut client has had time to acquire without the minority.
type clockJumpPartition struct {
	clock *clockJump
	cut   *toxicFault

	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	errs []error
}

// nameClockJumpPartition is the fault's one name: its entry's, its toxics', its own.
const nameClockJumpPartition = "clock-jump-partition"

// clockJumpPartitionEntry is the registry entry of clock-jump-partition, with the settings it reads.
func clockJumpPartitionEntry() Entry {
	return Entry{Name: nameClockJumpPartition,
		Summary:    "redlock: cut one client from a minority, and jump the clock of a master it still reaches",
		New:        newClockJumpPartition,
		Topologies: []string{"redlock"},
		Settings:   []settings.Setting{setClockJump(), setDirection()}}
}

func newClockJumpPartition(o Options) Fault {
	return &clockJumpPartition{clock: &clockJump{jump: o.Duration("clock-jump")},
		cut: &toxicFault{name: nameClockJumpPartition, toxic: "timeout", direction: orDefault(o.String("direction"), "both"),
			toxicity: 1, attrs: dropAll}}
}

func (f *clockJumpPartition) Name() string { return nameClockJumpPartition }

// Prepare starts the servers under libfaketime.
func (f *clockJumpPartition) Prepare(o *cluster.Options) error { return f.clock.Prepare(o) }

func (f *clockJumpPartition) Available(t *Target) error {
	if _, err := needMasters(t); err != nil {
		return err
	}
	if err := needClients(t); err != nil {
		return err
	}
	if err := f.cut.Available(t); err != nil {
		return err
	}
	return f.clock.Available(t)
}

func (f *clockJumpPartition) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	nodes, err := needMasters(t)
	if err != nil {
		return err
	}
	jumper := nodes[rng.Intn(len(nodes))]
	var others []*cluster.Node
	for _, n := range nodes {
		if n != jumper {
			others = append(others, n)
		}
	}
	minority := pickNodes(others, len(nodes)-(len(nodes)/2+1), rng)
	c := rng.Intn(t.Clients.Count())
	paths := cutPaths(t, []int{c}, minority)
	f.cut.pick = func(*Target, *rand.Rand) ([]*cluster.Path, string) { return paths, "" }
	if err := f.cut.Start(ctx, t, rng, quiet{}); err != nil {
		return err
	}
	mark.Began(fmt.Sprintf("%s <-> %s; %s +%v every %v", ClientName(c), nodeNames(minority), jumper.Name, f.clock.amount(t), t.TTL/4))
	d, every := f.clock.amount(t), t.TTL/4
	f.stop, f.done, f.errs = make(chan struct{}), make(chan struct{}), nil
	go f.jumps(context.WithoutCancel(ctx), jumper, d, every)
	return nil
}

// jumps moves n's clock forward by d every period until Heal.
func (f *clockJumpPartition) jumps(ctx context.Context, n *cluster.Node, d, period time.Duration) {
	defer close(f.done)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-tick.C:
		}
		if _, err := jumpClock(ctx, n, d); err != nil {
			f.mu.Lock()
			f.errs = append(f.errs, err)
			f.mu.Unlock()
		}
	}
}

// Heal stops the jumps and heals the partition; the clock stays ahead.
func (f *clockJumpPartition) Heal(ctx context.Context, t *Target) error {
	if f.stop != nil {
		close(f.stop)
		<-f.done
		f.stop = nil
	}
	f.mu.Lock()
	errs := f.errs
	f.mu.Unlock()
	return errors.Join(append(errs, f.cut.Heal(ctx, t))...)
}
