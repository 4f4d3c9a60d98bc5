package workloads

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/settings"
)

// Counter is the guarded resource of the mutex workload: one integer per lock
// key, kept in the harness, outside the lock's Redis. Holders read it, work,
// and write it back plus one, so an update lost to an overlapping holder
// proves that two clients held the lock at once, whatever the lock's own
// Redis says. Seq numbers every write in the order the counter applied it.
type Counter struct {
	mu   sync.Mutex
	vals map[string]int64
	seq  map[string]int64
}

// NewCounter returns a counter at zero for every key.
func NewCounter() *Counter { return &Counter{vals: map[string]int64{}, seq: map[string]int64{}} }

// Read returns the key's value.
func (c *Counter) Read(key string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.vals[key]
}

// Write stores v and returns the write's sequence number for the key, and
// whether it was lost-update free (v is one more than what it replaced).
func (c *Counter) Write(key string, v int64) (seq int64, clean bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clean = v == c.vals[key]+1
	c.vals[key] = v
	c.seq[key]++
	return c.seq[key], clean
}

// MutexOptions shape the hold of the mutex workload.
type MutexOptions struct {
	Keys             int
	HoldMin, HoldMax time.Duration
	TTL              time.Duration
	// Overrun is the probability that a hold outlasts the TTL (7/6 of it:
	// the seed's 3.5 s of work under a 3 s TTL).
	Overrun float64
	// Abandon is the probability that a holder dies before releasing.
	Abandon float64
	// Think is the pause between a release and the next acquire.
	Think time.Duration
	// KeyPrefix starts every key the workload uses (lock keys and the
	// resource's own), so that a run on a user's Redis touches only keys
	// it can find and delete afterwards.
	KeyPrefix string
	// Settings are the run's setting values, the workload's own
	// (Entry.Settings) among them.
	Settings settings.Values
}

// Key names the i-th lock key of the run: KeyPrefix + Key(i).
func (o MutexOptions) Key(i int) string { return o.KeyPrefix + Key(i) }

// Mutex is the mutex workload: acquire a random key with the lock's own
// wait, read-modify-write its counter inside the hold, release.
type Mutex struct {
	opts    MutexOptions
	counter *Counter
	runner  *Runner
}

// NewMutex returns the mutex workload for runner r.
func NewMutex(r *Runner, opts MutexOptions) (*Mutex, error) {
	if opts.HoldMin < 0 || opts.HoldMax < opts.HoldMin {
		return nil, fmt.Errorf("hold range %v..%v is empty", opts.HoldMin, opts.HoldMax)
	}
	if opts.Overrun < 0 || opts.Overrun > 1 || opts.Abandon < 0 || opts.Abandon > 1 {
		return nil, fmt.Errorf("overrun and abandon are probabilities in [0,1]")
	}
	if opts.Keys <= 0 {
		opts.Keys = 1
	}
	return &Mutex{opts: opts, counter: NewCounter(), runner: r}, nil
}

// Name implements Workload.
func (m *Mutex) Name() string { return "mutex" }

// Counter is the guarded resource.
func (m *Mutex) Counter() *Counter { return m.counter }

// validityMargin is kept back from a lease's validity: the lock measures it
// from a start a little after the history's invocation.
const validityMargin = 2 * time.Millisecond

// bounded cuts a hold to the validity the lock promised, as a careful holder
// of a lock that reports one (token-validity, redlock) does. An overrun is
// the work that does not stop in time, so it is not cut.
func bounded(hold time.Duration, overrun bool, lease *locks.Lease) time.Duration {
	if overrun || lease.Validity <= 0 {
		return hold
	}
	return max(0, min(hold, lease.Validity-validityMargin))
}

// Step implements Workload.
func (m *Mutex) Step(ctx context.Context, p *Process) error {
	key := m.opts.Key(p.Rand.Intn(m.opts.Keys))
	h, err := take(ctx, p, m.opts, key)
	if err != nil || h == nil {
		return err
	}
	if err := m.work(ctx, p, key, h.work); err != nil {
		return err
	}
	return finish(ctx, p, h.lease, h.abandon, m.opts.Think)
}

// work is the critical section: read the counter, work for hold, write it
// back plus one. A pause stops it wherever it stands.
func (m *Mutex) work(ctx context.Context, p *Process, key string, hold time.Duration) error {
	if err := p.Gate.Step(ctx, "hold"); err != nil {
		return err
	}
	inv := p.Invoke(history.Event{Op: history.Read, Key: key})
	v := m.counter.Read(key)
	p.Complete(inv, history.OK, history.Event{Value: history.Int64(v)})
	if err := p.Gate.Sleep(ctx, hold); err != nil {
		return err
	}
	if err := p.Gate.Step(ctx, "work-done"); err != nil {
		return err
	}
	inv = p.Invoke(history.Event{Op: history.Write, Key: key, Value: history.Int64(v + 1)})
	seq, clean := m.counter.Write(key, v+1)
	p.Complete(inv, history.OK, history.Event{Value: history.Int64(v + 1), Seq: seq})
	if !clean {
		m.runner.stats.Overlaps.Add(1)
	}
	return nil
}

// Acquire takes key for p and records it. It returns a nil lease (and nil
// error) when the lock was not acquired or the outcome is unknown, and an
// error only when the process died.
func Acquire(ctx context.Context, p *Process, key string) (*locks.Lease, error) {
	return acquire(ctx, p, key, history.Acquire, 0)
}

// acquire records an acquire, or a nested-acquire by a process that already
// holds key (whose invocation names the owner the lock last asked a token
// for). A reentrant lease's depth goes into the completion's Value. hold is
// the work the caller means to do once it holds key (0: unsaid), which the
// faults read from the Acquired event.
func acquire(ctx context.Context, p *Process, key string, op history.Op, hold time.Duration) (*locks.Lease, error) {
	r := p.r
	ttl := r.cfg.TTL.Milliseconds()
	in := history.Event{Op: op, Key: key, TTLMillis: ttl}
	if op != history.Acquire {
		in.Lease = p.LastToken()
	}
	inv := p.Invoke(in)
	if op == history.Acquire {
		// A nested acquire is no step towards the key for the faults: its
		// process holds it already, and an Acquiring would tell them the
		// key was free again.
		p.observe(nemesis.ProtocolEvent{Kind: nemesis.Acquiring, Key: key, Stored: locks.StoredKey(p.Lock, key), TTL: r.cfg.TTL})
	}
	wctx, w := p.watchWire(ctx)
	lease, err := p.Lock.Acquire(wctx, key)
	r.stats.Ops.Add(1)
	if died(err) {
		p.Died(inv, err, history.Event{Lease: p.LastToken(), TTLMillis: ttl})
		return nil, err
	}
	t := Outcome(err)
	with := history.Event{Error: errText(err)}
	p.attemptFields(w, inv, t, err, &with)
	switch t {
	case history.OK:
		with.Lease, with.TTLMillis, with.Fence = lease.Token, lease.TTL.Milliseconds(), lease.Fence
		if !lease.Sent.IsZero() {
			// The lock named its writing command: the lease began then.
			sent := int64(lease.Sent.Sub(r.cfg.Recorder.Base()))
			with.Sent = min(max(sent, inv.Time), int64(r.cfg.Recorder.Now()))
		}
		if _, d, ok := history.ParseReentrantLease(lease.Token); ok {
			with.Value = history.Int64(d)
		}
		if op == history.Acquire {
			r.stats.Acquired.Add(1)
			r.hold(key, lease.Token, p.Client)
		}
	case history.Unknown:
		with.Lease, with.TTLMillis = p.LastToken(), ttl
	default:
		r.stats.AcquireFailed.Add(1)
	}
	p.Complete(inv, t, with)
	if t != history.OK {
		return nil, nil
	}
	if op == history.Acquire {
		p.observeAcquired(key, lease, hold)
	}
	return lease, nil
}

// Release gives lease back and records whether it deleted the key. It
// returns an error only when the process died.
func Release(ctx context.Context, p *Process, lease *locks.Lease) error {
	r := p.r
	inv := p.Invoke(history.Event{Op: history.Release, Key: lease.Key, Lease: lease.Token})
	p.observeReleasing(lease)
	defer p.observeReleased(lease)
	r.unhold(lease.Key, lease.Token)
	rctx, cancel := context.WithTimeout(ctx, ReleaseBound(r.cfg.TTL))
	deleted, err := p.Lock.Release(rctx, lease)
	cancel()
	r.stats.Ops.Add(1)
	if died(err) {
		p.Died(inv, err, history.Event{})
		return err
	}
	t := Outcome(err)
	with := history.Event{Error: errText(err)}
	if t == history.OK {
		with.Deleted = history.Bool(deleted)
	} else {
		t = history.Unknown // a release has no definite failure
	}
	p.Complete(inv, t, with)
	return nil
}

// ReleaseBound is how long the harness lets one Release run before it gives
// up on it (an unknown outcome): a library's release that waits on its
// background goroutines or on a dead connection must not stall its client
// for the rest of the run. Two TTLs and ten seconds leave room for a client
// pause landing inside the release.
func ReleaseBound(ttl time.Duration) time.Duration { return 2*ttl + 10*time.Second }

// died reports whether err means the process was killed mid-operation. Its
// open operation completes unknown under the same process id, and the crash
// event that follows names that process. A lock's fatal error ends the
// process the same way, and then the run.
func died(err error) bool { return err != nil && (errors.Is(err, ErrCrashed) || fatal(err)) }
