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
	"net"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/internal/sleep"
	"github.com/locktorture/locktorture/registry"
	"github.com/locktorture/locktorture/settings"
)

// ErrNotAcquired means the lock was definitely not taken: the key was held by
// someone else until the lock's own wait ran out. Any other error from Acquire
// leaves the outcome unknown (a timeout or reset may hide a write that landed).
var ErrNotAcquired = errors.New("lock not acquired")

// ErrCrashed is what a call returns when the client process that made it
// was killed under it: by the nemesis, or by the harness replacing a lock
// program that went silent. The workload then starts a fresh process, as
// after any crash.
var ErrCrashed = errors.New("client process crashed")

// RefusedError is an acquire that was not granted although the lock held
// the key for this client during the call: a lease that came back too late
// and was deleted again, say. It is a definite failure (errors.Is(err,
// ErrNotAcquired) holds), but while the key was held other clients were
// rightly refused, which the history must say so that their failures are
// not blamed on the lock. HeldFrom is no later than the first write of the
// key (the send of the command that wrote it), HeldTo no earlier than the
// moment the key was surely gone (the reply of its delete, or its last write
// plus the ttl if the delete failed); zero times mean the whole call.
type RefusedError struct {
	HeldFrom, HeldTo time.Time
	// Reason says why the lease was refused.
	Reason string
}

func (e *RefusedError) Error() string { return ErrNotAcquired.Error() + ": " + e.Reason }

// Unwrap makes a refusal a definite failure.
func (e *RefusedError) Unwrap() error { return ErrNotAcquired }

// Lease is what a successful Acquire hands back: the proof of ownership that
// Release (and a watchdog) must present.
type Lease struct {
	Key string
	// Token identifies this acquisition in the history, so it must be unique
	// across the run for every acquisition. Locks get such values from
	// Config.NewToken; token locks write it as the key's value, and locks
	// that write a constant still return one so that the history can tell
	// one acquisition from the next. A lock whose library picks its own
	// value may return that instead, if it is unique per acquisition, but
	// must still call NewToken once before its first command: the harness
	// names an acquire whose outcome is unknown by the last value NewToken
	// returned.
	Token string
	// Fence is a strictly increasing fencing token, 0 for locks without one.
	Fence int64
	// TTL the key was written with; 0 means it never expires.
	TTL time.Duration
	// Sent, when set, is when the command that wrote the key went out: a
	// lock whose one try sends several commands (a GET before the SET, a
	// SETNX then a PEXPIRE) says which one wrote it. Zero: the harness
	// takes the send of the acquire's last command, which for such a lock
	// is later than the write and would stretch the lease past its real
	// expiry.
	Sent time.Time
	// Validity is how long, from the return of Acquire, the lock itself
	// promises exclusivity (TTL minus the time the acquire took, for locks
	// that measure it); 0 when the lock makes no such promise.
	Validity time.Duration
	// Stored is the key the lock wrote in Redis for this lease when it is
	// not Key: a library that names its own keys (a namespace before the
	// name it is given, a suffix after it) says so here, or for every
	// lease at once as a KeyNamer. Empty: Key itself.
	Stored string
	// Handle is the lock's own state for this lease, set by Acquire and read
	// back by Release: a third-party library's lock object (a redsync
	// mutex, a redislock lock, rueidislock's cancel function) rides here so
	// that an adapter needs no table of its own. The harness never reads it.
	Handle any

	stop func() // stops background renewal; nil when there is none
}

// StoredKey is the key the lease holds in Redis: Stored, else Key.
func (l *Lease) StoredKey() string {
	if l.Stored != "" {
		return l.Stored
	}
	return l.Key
}

// KeyNamer is a Lock that writes another key than the one it is asked to
// take, as most real libraries do: django-redis puts Django's ":1:" before
// the name, a library its own namespace. The faults that read a lease on
// the servers (an aimed failover, the node that holds a live lease, the
// slot a cluster fault strikes) look for the key it names; without it
// they wait all run for a key nobody writes, and the run is untested.
type KeyNamer interface {
	// StoredKey is the key the lock writes in Redis to take key.
	StoredKey(key string) string
}

// StoredKey is the key lk writes in Redis to take key: what it says as a
// KeyNamer, else key itself.
func StoredKey(lk Lock, key string) string {
	if n, ok := lk.(KeyNamer); ok {
		if k := n.StoredKey(key); k != "" {
			return k
		}
	}
	return key
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
	// Addrs are the Redis addresses of the masters, in the order of Nodes,
	// for a lock whose library does not use go-redis: it must dial them
	// with Dial, never directly. Empty on topologies whose master is found
	// at run time (sentinel, cluster): such a lock refuses to run there.
	Addrs []string
	// Dial opens this client's connection to one of Addrs through its fault
	// proxies and its gate, so that network faults, pauses and crashes reach
	// a library's own connections as they reach Nodes. Set with Addrs.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Routes tell a lock that runs as a program of its own (locks/program)
	// where this client's servers are. Such a lock cannot use Dial, so
	// every address in it is this client's own: its fault proxies (the
	// nodes themselves in a run without faults), where network faults
	// reach it; pauses and crashes reach it as signals.
	Routes Routes
	// Client numbers the client of the run this lock serves (from 0), for
	// messages that must name it.
	Client int
	// CommandTimeout is the per-command (dial, read, write) timeout the
	// harness gave Nodes; a library with its own client applies the same.
	// 0 means each client library's own default.
	CommandTimeout time.Duration
	// RedisRetries is the go-redis MaxRetries the harness gave Nodes
	// (--redis-retries; -1: none); nil means the library's own default. A
	// library with its own client that retries applies the same count.
	RedisRetries *int
	// TTL of the lock key.
	TTL time.Duration
	// Wait bounds how long Acquire keeps retrying (the seed's "lock wait");
	// 0 means a single attempt.
	Wait time.Duration
	// RetryDelay is the pause between attempts, jittered by up to half;
	// 0 backs off from a millisecond to a twentieth of the TTL (see
	// RetryDelayAt).
	RetryDelay time.Duration
	// Rand is this client's seeded source, so runs replay from their seed.
	Rand *rand.Rand
	// NewToken returns a value unique across the run for each acquisition.
	NewToken func() string
	// Hooks let the harness watch and interrupt the protocol.
	Hooks Hooks
	// Clients are the clients that share this lock object (--share), in
	// order, when more than one does: the lock then serves them all at
	// once, each call from its client's own goroutine (ClientFrom names
	// it), as a library's lock object shared by the threads of one
	// process. Client is the first of them. Nil when the lock serves
	// Client alone.
	Clients []int
	// Settings are the run's setting values, the lock's own (Entry.Settings)
	// among them.
	Settings settings.Values
}

// Routes are how a lock in another process reaches one client's servers
// on any topology. On single and redlock it dials the masters; on sentinel
// and cluster it finds the master, or each slot's owner, as its library
// does, and the servers then name addresses of their own (a Sentinel's
// answer, CLUSTER SLOTS, MOVED and ASK), which AddrMap turns into this
// client's: a connection to an address neither listed here nor reached
// through AddrMap would bypass the client's fault proxies.
type Routes struct {
	// Topology is the topology's name: single, redlock, sentinel or
	// cluster.
	Topology string
	// Addrs are this client's own addresses of Config.Addrs, in their
	// order, on single and redlock; of every node, as seeds to learn the
	// slots from, on cluster; none on sentinel.
	Addrs []string
	// Sentinels are this client's own addresses of the Sentinels, and
	// MasterName the name they know the master by (sentinel only).
	Sentinels  []string
	MasterName string
	// AddrMap maps each address a server may announce to this client's
	// own address for it (sentinel and cluster).
	AddrMap map[string]string
}

// Empty reports whether r gives a lock nothing to connect to: a topology
// that does not say where its servers are (a user's own Sentinels).
func (r Routes) Empty() bool { return len(r.Addrs) == 0 && len(r.Sentinels) == 0 }

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
	// Sent is for a lock whose commands do not go through Nodes (a lock
	// program): it tells the harness an attempt of the call running under
	// ctx sent its command no earlier than at, and the function it returns
	// that its reply is surely back, so the history places attempts and
	// lease starts as it does from Nodes' own commands. Nil when nothing
	// records them.
	Sent func(ctx context.Context, at time.Time) (replied func())
	// Armed reports whether a fault may act at the next step of the
	// client calling under ctx (a crash or pause aimed at a point, a fault
	// waiting for a step to land on). A lock program asks its program to
	// wait at each step of a request for the harness's go only then: a
	// round trip per command is half a fast program's speed, and where
	// nothing acts at a step it buys nothing. Nil: always.
	Armed func(ctx context.Context) bool
}

type unawaitedKey struct{}

// Unawaited marks ctx as a step whose command went out without waiting
// for the harness (a lock program's step in a request that did not await
// its go): the step is counted and its point recorded, but nothing can
// land before its command any more, so no fault takes it.
func Unawaited(ctx context.Context) context.Context {
	return context.WithValue(ctx, unawaitedKey{}, true)
}

// IsUnawaited reports whether ctx was marked by Unawaited.
func IsUnawaited(ctx context.Context) bool {
	b, _ := ctx.Value(unawaitedKey{}).(bool)
	return b
}

// AtStep reports whether a fault may act at the next step under ctx, as
// h.Armed says (always, without one).
func (h Hooks) AtStep(ctx context.Context) bool { return h.Armed == nil || h.Armed(ctx) }

// FatalError is what a lock returns when it can no longer report outcomes
// the history can trust: a lock program that broke its protocol or died on
// its own. The run ends with it (a harness error, exit code 2) instead of
// recording guesses.
type FatalError struct{ Err error }

func (e *FatalError) Error() string { return e.Err.Error() }
func (e *FatalError) Unwrap() error { return e.Err }

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

// checkTTL is check for a lock whose keys expire: it also needs a positive
// TTL, where check allows none.
func (c Config) checkTTL(name string, nodes int) error {
	if err := c.check(name, nodes); err != nil {
		return err
	}
	if c.TTL <= 0 {
		return fmt.Errorf("lock %s needs a positive ttl", name)
	}
	return nil
}

// leased is the Factory of a single-node lock whose keys expire, name:
// it checks the Config (see checkTTL) before build makes the lock.
func leased(name string, build func(Config) Lock) Factory {
	return func(cfg Config) (Lock, error) {
		if err := cfg.checkTTL(name, 1); err != nil {
			return nil, err
		}
		return build(cfg), nil
	}
}

func (c Config) retryDelay() time.Duration { return c.NextRetryDelay() }

// retryDelayAt is RetryDelayAt, for the built-in locks.
func (c Config) retryDelayAt(n int) time.Duration { return c.RetryDelayAt(n) }

// Factory builds one client's instance of a lock.
type Factory func(Config) (Lock, error)

// Entry is one lock of the registry: what `torture list` shows and what a
// run needs to build each client's instance.
type Entry struct {
	Name string
	// Summary is the one line `torture list` prints: the algorithm and the
	// failure it exists to show.
	Summary string
	// Nodes is how many independent Redis masters it needs; 0 means 1.
	Nodes int
	New   Factory
	// RenewsUnseen declares that the lock extends its keys in the
	// background where the harness cannot see it (a library's own
	// goroutine on its own client, reporting nothing through
	// Hooks.Renew): the history then holds no refresh, and without this a
	// lease would look over one TTL after its acquire, the key free, and
	// every acquire refused after that a spurious failure. The history's
	// header records it (history.RunInfo.RenewsUnseen).
	RenewsUnseen bool
	// Settings are the knobs this lock reads beyond the run's own (from
	// Config.Settings): each is a flag of torture run and a spec key.
	Settings []settings.Setting
	// Topologies are the topologies the lock can serve (single, redlock,
	// sentinel, cluster); empty: every one. A run on another is refused
	// before any server starts, naming those it serves: a library with no
	// Sentinel client, or one that dials the masters' addresses itself.
	Topologies []string
	// Probe, when set, checks once before the clients start that the lock
	// can run with cfg (a lock program starts, speaks the protocol and
	// stops) and returns the name and version it gives itself, which the
	// history records. Its error is the run's, worded for the user.
	Probe func(ctx context.Context, cfg Config) (name string, err error)
}

// About implements registry.Entry.
func (e Entry) About() (string, string) { return e.Name, e.Summary }

// Declared lists the settings the entry reads beyond the run's own.
func (e Entry) Declared() []settings.Setting { return e.Settings }

// Check implements registry.Entry.
func (e Entry) Check() error {
	if e.New == nil {
		return registry.ErrNoConstructor
	}
	if e.Nodes < 0 {
		return fmt.Errorf("negative node count %d", e.Nodes)
	}
	return nil
}

// Serves reports, as an error worded for the user, that the lock cannot
// run on topology (see Topologies).
func (e Entry) Serves(topology string) error {
	if len(e.Topologies) == 0 || slices.Contains(e.Topologies, topology) {
		return nil
	}
	return fmt.Errorf("lock %s %w %s: it serves %s", e.Name, ErrNotServed, topology, strings.Join(e.Topologies, ", "))
}

// ErrNotServed is wrapped by every error saying a lock cannot run on the
// topology asked for (Entry.Serves, a lock program's hello), so a caller
// trying many topologies, as torture hunt does, can tell it from a
// harness failure.
var ErrNotServed = errors.New("does not serve topology")

// Masters is how many independent masters the lock needs (at least 1).
func (e Entry) Masters() int { return max(e.Nodes, 1) }

// Registry holds the locks a run can put under test, by name.
type Registry = registry.Registry[Entry]

// NewRegistry returns an empty lock registry.
func NewRegistry() *Registry { return registry.New[Entry]("lock") }

// Builtin returns a registry of every lock this package implements; callers
// add their own with Register, the same call the built-ins go through.
func Builtin() *Registry {
	return registry.Of("lock", builtins()...)
}

// pause waits d between attempts; a context that ended is the error.
func pause(ctx context.Context, d time.Duration) error {
	if !sleep.For(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// retry runs attempt until it acquires, fails, or cfg.Wait runs out: the
// seed's "lock wait" step (优化一：锁等待), shared by every single-node lock.
func retry(ctx context.Context, cfg Config, attempt func(context.Context) (bool, error)) error {
	return retryPaced(ctx, cfg, attempt, func(n int, _ time.Duration) time.Duration { return cfg.retryDelayAt(n) })
}

// retryPaced runs attempt until it acquires, fails, or cfg.Wait runs out,
// sleeping delay(n, took) after the nth attempt, which took took, and
// giving up where that sleep would end past the wait.
func retryPaced(ctx context.Context, cfg Config, attempt func(context.Context) (bool, error), delay func(n int, took time.Duration) time.Duration) error {
	deadline := time.Now().Add(cfg.Wait)
	for n := 1; ; n++ {
		if err := cfg.Hooks.step(ctx, "attempt"); err != nil {
			return err
		}
		start := time.Now()
		ok, err := attempt(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		d := delay(n, time.Since(start))
		if time.Now().Add(d).After(deadline) {
			return ErrNotAcquired
		}
		if err := pause(ctx, d); err != nil {
			// No command is in flight between attempts (a Redlock
			// attempt undoes its votes): a definite failure.
			return fmt.Errorf("%w: %v", ErrNotAcquired, err)
		}
	}
}

type clientKey struct{}

// WithClient marks ctx as a call of client n. A lock shared by several
// clients (Config.Clients) learns from it which of them calls, as a thread
// would be known by its own identity.
func WithClient(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, clientKey{}, n)
}

// ClientFrom is the client WithClient marked ctx with.
func ClientFrom(ctx context.Context) (int, bool) {
	n, ok := ctx.Value(clientKey{}).(int)
	return n, ok
}
