// The clock-jump fault: a node's wall clock stepped forward past the TTL, so
// that it expires every lock it holds at once while the holders' leases
// still run, with its entry and its clock-jump setting, which
// clock-jump-partition reads too.

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/settings"
)

// clockJump makes the wall clock of one node jump forward by more than the
// TTL, as an NTP step or an operator's `date -s` would: the node expires
// every lock it holds at once, while each holder's lease still runs on its
// own clock. On one node (a token lock) the next client acquires within the
// lease: double holder. Under Redlock one node forgetting is not enough; see
// clock-jump-partition.
//
// Prepare starts every redis-server under libfaketime (Debian's faketime
// package), which is why the fault must be chosen before the topology
// starts; Start picks a node (seeded) and jumps it: aimed (the default), a
// node that holds a live lease, right after the acquire; blind, any node. The clock never comes
// back (Heal does nothing): stepping it back would make the keys set in
// between outlive their TTL, and real clocks are not stepped back to undo a
// jump either. Each start jumps further ahead.
type clockJump struct {
	jump     time.Duration
	prepared bool
}

// nameClockJump is the fault's one name: its entry's and its own.
const nameClockJump = "clock-jump"

// clockJumpEntry is the registry entry of clock-jump, with the settings it reads.
func clockJumpEntry() Entry {
	return Entry{Name: nameClockJump,
		Summary:  "a node runs under libfaketime; its wall clock jumps forward by more than the TTL",
		New:      newClockJump,
		Settings: []settings.Setting{setClockJump()}}
}

// setClockJump is how far the clock jumps, in clock-jump and in
// clock-jump-partition.
func setClockJump() settings.Setting {
	return settings.Setting{Name: "clock-jump", Kind: settings.Duration, Default: "2 x TTL",
		Help: "how far clock-jump moves a node's clock forward (every key on the node expires at once)"}
}

func newClockJump(o Options) Fault { return &clockJump{jump: o.Duration("clock-jump")} }

func (f *clockJump) Name() string { return nameClockJump }

// Prepare starts the servers under libfaketime.
func (f *clockJump) Prepare(o *cluster.Options) error {
	lib, err := cluster.FindLibfaketime()
	if err != nil {
		return err
	}
	o.Env = faketimeEnv(lib, o.Env)
	f.prepared = true
	return nil
}

func (f *clockJump) Available(t *Target) error {
	if err := needNodes(t); err != nil {
		return err
	}
	for _, n := range t.Topology.Nodes() {
		if _, err := n.Files(); err != nil {
			return fmt.Errorf("moves a server's clock through a file in its working directory: %w", err)
		}
	}
	if !f.prepared {
		return errors.New("the servers were not started under libfaketime (Prepare was not called)")
	}
	if f.jump < 0 {
		return fmt.Errorf("clock jump %v: must be positive", f.jump)
	}
	return nil
}

// amount is how far each jump goes: more than the TTL, so that a key set
// just before the jump is gone right after it.
func (f *clockJump) amount(t *Target) time.Duration {
	if f.jump > 0 {
		return f.jump
	}
	return 2 * t.TTL
}

// Aims implements Aiming.
func (f *clockJump) Aims() bool { return true }

func (f *clockJump) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	n, err := aimNode(ctx, t, rng, mark)
	if err != nil {
		return err
	}
	d := f.amount(t)
	total, err := jumpClock(ctx, n, d)
	if err != nil {
		return err
	}
	mark.Began(fmt.Sprintf("%s +%v (now %v ahead)", n.Name, d, total))
	return nil
}

// Heal leaves the clock where it jumped to.
func (f *clockJump) Heal(context.Context, *Target) error { return nil }
