package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
)

// clockFile is the libfaketime timestamp file of a node, relative to the
// node's directory (redis-server's working directory): it holds the node's
// offset from real time, "+1.200" for 1.2 s ahead.
const clockFile = "faketime.offset"

// faketimeEnv returns a cluster.Options.Env that starts every server under
// libfaketime, reading its offset from its own clockFile on every clock
// call (FAKETIME_NO_CACHE), so that the offset can change while it runs. Only
// the wall clock moves: the monotonic clock the server uses for its event
// loop stays real, as in an NTP step. libc.so.6 is preloaded after
// libfaketime so that malloc is glibc's: Debian's redis-server is linked with
// jemalloc, whose initialisation calls clock_gettime, and libfaketime, whose
// own initialisation allocates, then recurses and the server hangs at start
// (libfaketime issue #130).
func faketimeEnv(lib string, prev func(node string) []string) func(node string) []string {
	return func(node string) []string {
		env := []string{"LD_PRELOAD=" + lib + ":libc.so.6", "FAKETIME_TIMESTAMP_FILE=" + clockFile,
			"FAKETIME_NO_CACHE=1", "FAKETIME_DONT_FAKE_MONOTONIC=1"}
		if prev != nil {
			env = append(env, prev(node)...)
		}
		return env
	}
}

// readOffset returns how far ahead a node's clock runs now.
func readOffset(ctx context.Context, n *cluster.Node) (time.Duration, error) {
	files, err := n.Files()
	if err != nil {
		return 0, err
	}
	b, err := files.ReadFile(ctx, clockFile)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read clock offset of %s: %w", n.Name, err)
	}
	s := strings.TrimPrefix(strings.TrimSpace(string(b)), "+")
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("clock offset of %s: %q: %w", n.Name, b, err)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// jumpClock moves the wall clock of n forward by d and checks that the
// server sees it: the keys it holds expire by its clock, so every key with
// less than d left is gone at once. It returns how far ahead the node now is.
func jumpClock(ctx context.Context, n *cluster.Node, d time.Duration) (time.Duration, error) {
	cur, err := readOffset(ctx, n)
	if err != nil {
		return 0, err
	}
	total := cur + d
	files, err := n.Files()
	if err != nil {
		return 0, err
	}
	if err := files.WriteFile(ctx, clockFile, []byte(fmt.Sprintf("+%.3f\n", total.Seconds()))); err != nil {
		return 0, fmt.Errorf("write clock offset of %s: %w", n.Name, err)
	}
	// Ask the server its time directly, not through a client's proxy.
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, DisableIdentity: true, PoolSize: 1,
		DialTimeout: time.Second, ReadTimeout: time.Second})
	defer c.Close()
	before := time.Now()
	now, err := c.Time(ctx).Result()
	if err != nil {
		return total, fmt.Errorf("read the clock of %s after the jump: %w", n.Name, err)
	}
	if ahead := now.Sub(before); ahead < total/2 {
		return total, fmt.Errorf("the clock of %s did not move (%v ahead, want %v): is it running under libfaketime?",
			n.Name, ahead.Round(time.Millisecond), total)
	}
	return total, nil
}

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

func newClockJump(o Options) Fault { return &clockJump{jump: o.Duration("clock-jump")} }

func (f *clockJump) Name() string { return "clock-jump" }

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

func newClockJumpPartition(o Options) Fault {
	return &clockJumpPartition{clock: &clockJump{jump: o.Duration("clock-jump")},
		cut: &toxicFault{name: "clock-jump-partition", toxic: "timeout", direction: orDefault(o.String("direction"), "both"),
			toxicity: 1, attrs: dropAll}}
}

func (f *clockJumpPartition) Name() string { return "clock-jump-partition" }

// Prepare starts the servers under libfaketime.
func (f *clockJumpPartition) Prepare(o *cluster.Options) error { return f.clock.Prepare(o) }

func (f *clockJumpPartition) Available(t *Target) error {
	if _, err := needMasters(t); err != nil {
		return err
	}
	if t.Clients == nil {
		return errors.New("needs clients")
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
