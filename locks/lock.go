// Package locks holds the lock algorithms put under test, behind one public
// interface that another Go module can implement to put its own lock under the
// same clients, faults and checkers.
//
// The built-in variants follow the steps of the seed articles (seed 000, "循序渐进
// Redis 分布式锁"), each the fix for the failure the step before it showed, so a
// run of each one reproduces the failure its successor was written to fix.
package locks

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotAcquired means the lock was definitely not taken: the key was held by
// someone else until the lock's own wait ran out. Any other error from Acquire
// leaves the outcome unknown (a timeout or reset may hide a write that landed).
var ErrNotAcquired = errors.New("lock not acquired")

// Lease is what a successful Acquire hands back: the proof of ownership that
// Release (and a watchdog) must present.
type Lease struct {
	Key string
	// Token identifies this acquisition. Token locks write it as the key's
	// value; locks that write a constant still get a unique Token so that the
	// history can tell one acquisition from the next.
	Token string
	// Fence is a strictly increasing fencing token, 0 for locks without one.
	Fence int64
	// TTL the key was written with; 0 means it never expires.
	TTL time.Duration
	// Validity is how long, from the return of Acquire, the lock itself
	// promises exclusivity (TTL minus the time the acquire took, for locks
	// that measure it); 0 when the lock makes no such promise.
	Validity time.Duration

	stop func() // stops background renewal; nil when there is none
}

// StopRenewal stops a background renewal of the lease, if any. Release calls
// it; a harness simulating a crash calls it too (a dead process renews nothing).
func (l *Lease) StopRenewal() {
	if l != nil && l.stop != nil {
		l.stop()
	}
}

// OnStop lets a Lock implemented outside this package attach its own renewal
// stopper to a lease.
func (l *Lease) OnStop(stop func()) { l.stop = stop }

// Lock is a distributed lock algorithm as one client process uses it. Each
// client of a run gets its own Lock (built by a Factory over that client's own
// Redis connections), so implementations need not be safe for concurrent use
// except between Acquire/Release and their own background goroutines.
type Lock interface {
	// Acquire takes key, waiting and retrying as the algorithm does, until it
	// holds the lock (nil error), the lock's own wait runs out
	// (ErrNotAcquired), or something fails (any other error: outcome unknown).
	Acquire(ctx context.Context, key string) (*Lease, error)
	// Release gives the lease back. deleted reports whether a key was really
	// deleted, which makes a release of someone else's lock visible. An error
	// leaves the outcome unknown.
	Release(ctx context.Context, lease *Lease) (deleted bool, err error)
}

// Config is what a Factory gets to build one client's Lock.
type Config struct {
	// Nodes are this client's connections, one per Redis master; single-node
	// locks use Nodes[0].
	Nodes []redis.UniversalClient
	// TTL of the lock key.
	TTL time.Duration
	// Wait bounds how long Acquire keeps retrying (the seed's "lock wait");
	// 0 means a single attempt.
	Wait time.Duration
	// RetryDelay is the pause between attempts; jittered by up to half.
	RetryDelay time.Duration
	// Rand is this client's seeded source, so runs replay from their seed.
	Rand *rand.Rand
	// NewToken returns a value unique across the run for each acquisition.
	NewToken func() string
	// Hooks let the harness watch and interrupt the protocol.
	Hooks Hooks
}

// Hooks let the harness see what a lock does in the background and stop it
// where a real process could stop. Every field may be nil.
type Hooks struct {
	// Step is called at each point of the protocol where a process could
	// stop dead: before each command, between commands, in the watchdog. It
	// blocks while the client is paused (a stop-the-world pause) and returns
	// an error when the client has crashed, which the lock returns at once
	// without cleaning up, as a killed process would.
	Step func(ctx context.Context, point string) error
	// Renew is called before each background renewal of a lease; the
	// function it returns is called with the outcome: extended, or err
	// (nil, ErrNotAcquired when the lease was no longer ours, or a failure).
	Renew func(lease *Lease) func(err error)
}

func (h Hooks) step(ctx context.Context, point string) error {
	if h.Step == nil {
		return ctx.Err()
	}
	return h.Step(ctx, point)
}

func (h Hooks) renew(l *Lease) func(error) {
	if h.Renew == nil {
		return func(error) {}
	}
	return h.Renew(l)
}

func (c Config) check(name string, nodes int) error {
	if len(c.Nodes) < nodes {
		return fmt.Errorf("lock %s needs %d redis node(s), got %d", name, nodes, len(c.Nodes))
	}
	if c.TTL < 0 || c.Wait < 0 || c.RetryDelay < 0 {
		return fmt.Errorf("lock %s: negative ttl, wait or retry delay", name)
	}
	if c.Rand == nil || c.NewToken == nil {
		return fmt.Errorf("lock %s: config needs Rand and NewToken", name)
	}
	return nil
}

func (c Config) retryDelay() time.Duration {
	d := c.RetryDelay
	if d <= 0 {
		d = c.TTL / 20
	}
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d + time.Duration(c.Rand.Int63n(int64(d)/2+1))
}

// Factory builds one client's instance of a lock.
type Factory func(Config) (Lock, error)

// Entry describes a registered lock.
type Entry struct {
	Name string
	// Summary is the one line `torture list` prints: the algorithm and the
	// failure it exists to show.
	Summary string
	// Nodes is how many independent Redis masters it needs (1 for most).
	Nodes int
	New   Factory
}

// Registry maps lock names to factories. Builtin returns one holding the
// variants of this package; callers may add their own.
type Registry struct{ m map[string]Entry }

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{m: map[string]Entry{}} }

// Register adds a lock; names must be unique.
func (r *Registry) Register(e Entry) error {
	if e.Name == "" || e.New == nil {
		return errors.New("register lock: name and factory are required")
	}
	if _, dup := r.m[e.Name]; dup {
		return fmt.Errorf("register lock %q: already registered", e.Name)
	}
	if e.Nodes == 0 {
		e.Nodes = 1
	}
	r.m[e.Name] = e
	return nil
}

// Get returns the named lock, or an error listing the known names.
func (r *Registry) Get(name string) (Entry, error) {
	e, ok := r.m[name]
	if !ok {
		return Entry{}, fmt.Errorf("unknown lock %q (known: %v)", name, r.Names())
	}
	return e, nil
}

// Names lists the registered locks in order.
func (r *Registry) Names() []string {
	var out []string
	for n := range r.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Entries lists the registered locks, sorted by name.
func (r *Registry) Entries() []Entry {
	var out []Entry
	for _, n := range r.Names() {
		out = append(out, r.m[n])
	}
	return out
}

// Builtin returns a registry of every lock this package implements.
func Builtin() *Registry {
	r := NewRegistry()
	for _, e := range builtins() {
		if err := r.Register(e); err != nil {
			panic(err) // a duplicate among the built-ins is a programming error
		}
	}
	return r
}

// sleep waits d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retry runs attempt until it acquires, fails, or cfg.Wait runs out: the
// seed's "lock wait" step (优化一：锁等待), shared by every single-node lock.
func retry(ctx context.Context, cfg Config, attempt func(context.Context) (bool, error)) error {
	deadline := time.Now().Add(cfg.Wait)
	for {
		if err := cfg.Hooks.step(ctx, "attempt"); err != nil {
			return err
		}
		ok, err := attempt(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		d := cfg.retryDelay()
		if time.Now().Add(d).After(deadline) {
			return ErrNotAcquired
		}
		if err := sleep(ctx, d); err != nil {
			// No command is in flight between attempts: a definite failure.
			return fmt.Errorf("%w: %v", ErrNotAcquired, err)
		}
	}
}
