// Package workloads is what clients do: the acquire/hold/release loops and
// the guarded resource they touch while they believe they hold the lock. Every
// operation goes into the history as an invocation and a completion.
package workloads

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/redis/go-redis/v9"
)

// Workload is one kind of client behaviour. Step runs one iteration for a
// process (for the mutex workload: acquire, hold, release). An error ends the
// process: ErrCrashed when it was killed, ErrAbandon when it died on purpose
// holding its lock; any other error is logged by the runner and the client
// goes on under a new process.
type Workload interface {
	Name() string
	Step(ctx context.Context, p *Process) error
}

// ErrAbandon ends a process that dies holding its lock, as kill -9 would.
var ErrAbandon = errors.New("client abandoned its lock")

// Process is one incarnation of a client: its own Redis connections, its own
// lock instance, its own gate and process id in the history. After an unknown
// outcome it takes a new process id; after a crash a new Process replaces it.
type Process struct {
	Client int
	Gate   *Gate
	Lock   locks.Lock
	Rand   *rand.Rand
	// Nodes are the process's own connections (closed when it dies).
	Nodes []redis.UniversalClient

	r *Runner
	// shared is the incarnation of the client's group (--share) whose
	// gate, lock and connections the process uses; nil when it owns them.
	shared    *instance
	id        atomic.Int64
	lastToken atomic.Value // string: the token of the latest acquire attempt
	tokens    int
	watchdog  atomic.Int64 // process id of the renewals, 0 until the first
}

// ID is the process id that stamps the process's operations now.
func (p *Process) ID() int { return int(p.id.Load()) }

// Invoke records the start of an operation of this process.
func (p *Process) Invoke(e history.Event) history.Event {
	e.Client, e.Process = p.Client, p.ID()
	return p.r.cfg.Recorder.Invoke(e)
}

// Complete records the completion of inv. An Unknown completion retires the
// process id: the client goes on under a fresh one.
func (p *Process) Complete(inv history.Event, t history.Type, with history.Event) {
	p.r.cfg.Recorder.Complete(inv, t, with)
	if t == history.Unknown {
		p.r.stats.Unknown.Add(1)
		p.id.Store(int64(p.r.newProcessID()))
	}
}

// Died completes inv as unknown under the same process id: the process was
// killed in it (or its lock program went silent and was replaced), and the
// crash event that follows names that process.
func (p *Process) Died(inv history.Event, err error, with history.Event) {
	with.Error = err.Error()
	p.r.cfg.Recorder.Complete(inv, history.Unknown, with)
	p.r.stats.Unknown.Add(1)
}

// Outcome classifies an error from a lock call: nil is ok, ErrNotAcquired
// is a definite failure, anything else may or may not have happened.
func Outcome(err error) history.Type {
	switch {
	case err == nil:
		return history.OK
	case errors.Is(err, locks.ErrNotAcquired):
		return history.Fail
	}
	return history.Unknown
}

// Config is what the runner needs to put clients to work.
type Config struct {
	Clients int
	Keys    int
	TTL     time.Duration
	Seed    int64
	// Lock builds each process's lock; LockConfig is its template (Nodes,
	// Rand, NewToken and Hooks are filled per process).
	Lock       locks.Factory
	LockConfig locks.Config
	// Connect opens a new process's Redis connections; every connection it
	// dials must go through gate.Conn so that pauses and crashes reach it.
	Connect func(client int, gate *Gate) ([]redis.UniversalClient, error)
	// Dial, when set, gives a new process the dial function behind its
	// connections (through its proxies and gate), for locks whose library
	// opens its own (locks.Config.Dial).
	Dial func(client int, gate *Gate) func(ctx context.Context, network, addr string) (net.Conn, error)
	// Routes, when set, tells locks that run as programs where a client's
	// servers are, at its own fault proxies (locks.Config.Routes).
	Routes func(client int) locks.Routes
	// Recorder receives the history.
	Recorder *history.Recorder
	// Logf reports harness trouble (a process that could not start).
	Logf func(format string, args ...any)
	// Share is how many clients use one lock object (see group); 0 or 1:
	// each its own.
	Share int
	// Observe, when set, is told of every protocol step of every process
	// (see nemesis.ProtocolEvent), in the process's goroutine: the nemesis aims its
	// faults with it.
	Observe func(nemesis.ProtocolEvent)
	// Armed, when set, reports whether a fault waits to act at a step of
	// the client (nemesis.Watch.Armed): a lock program awaits the go of a
	// request's steps only then, or while the client's own gate has a
	// crash or pause coming. Nil: nothing but the gate acts at steps.
	Armed func(client int) bool
}

// Stats are live counters for the status line and summary.json. Ops counts
// lock operations only (acquires and releases, nested ones too), so that
// ops/s compare across workloads; ResourceOps counts the guarded resource's
// own operations apart. Unknown counts every operation recorded with an
// unknown outcome, those a crash or a silent lock program ended included.
type Stats struct {
	Ops, ResourceOps, Acquired, AcquireFailed, Unknown, Crashes, Overlaps atomic.Int64
}

// Runner runs a workload on Clients concurrent clients.
type Runner struct {
	cfg   Config
	stats Stats

	nextPID atomic.Int64
	// abort ends the run with a lock's fatal error, the first of which
	// is kept in failed (see Err).
	abort  func(error)
	failed error

	mu      sync.Mutex
	current map[int]*Process // the live process of each client
	// prepared are the first processes Prepare started, until Run
	// takes them.
	prepared []spawned
	holders  map[string]map[string]int
	// groups are the clients that share a lock object, by c/Share; nil
	// when none do.
	groups []*group
}

// NewRunner checks cfg and returns a runner.
func NewRunner(cfg Config) (*Runner, error) {
	if cfg.Clients <= 0 || cfg.Keys <= 0 {
		return nil, fmt.Errorf("workload needs at least one client and one key (got %d clients, %d keys)", cfg.Clients, cfg.Keys)
	}
	if cfg.Lock == nil || cfg.Connect == nil || cfg.Recorder == nil {
		return nil, errors.New("workload config needs Lock, Connect and Recorder")
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	r := &Runner{cfg: cfg, current: map[int]*Process{}, holders: map[string]map[string]int{}}
	r.groups = newGroups(r)
	return r, nil
}

// Stats returns the live counters.
func (r *Runner) Stats() *Stats { return &r.stats }

func (r *Runner) newProcessID() int { return int(r.nextPID.Add(1)) }

// Current returns the live process of a client, nil if it has none.
func (r *Runner) Current(client int) *Process {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current[client]
}

// Key names the i-th lock key.
func Key(i int) string { return fmt.Sprintf("lock:%d", i) }

// Run runs w on every client until ctx ends, then lets each client finish
// its current iteration (releasing what it holds), giving up after grace.
// Operations run under their own context so that the end of the run does not
// turn them into unknown outcomes.
func (r *Runner) Run(ctx context.Context, w Workload, grace time.Duration) {
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	r.mu.Lock()
	r.abort = abort
	r.mu.Unlock()
	ops, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-stopped:
			return
		}
		select {
		case <-time.After(grace):
			cancel()
		case <-stopped:
		}
	}()
	var wg sync.WaitGroup
	for c := 0; c < r.cfg.Clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			r.client(ctx, ops, w, c)
		}(c)
	}
	wg.Wait()
	close(stopped)
	// A client that never ran (ctx ended first) leaves its first process.
	for c := range r.cfg.Clients {
		if s, ok := r.first(c); ok && s.p != nil {
			r.retire(s.p, nil)
		}
	}
}

// spawned is a client's first process, started before the run's clock.
type spawned struct {
	p   *Process
	err error
	rng *rand.Rand
}

// Prepare starts every client's first process, side by side, before Run:
// a lock that runs as a program of its own takes its interpreter's start
// (a fifth of a second for Python importing its Redis library) here, not
// out of the run's duration, so ops/s measure the lock, not start-up.
// Calling it is optional; Run starts what Prepare did not.
func (r *Runner) Prepare() {
	out := make([]spawned, r.cfg.Clients)
	var wg sync.WaitGroup
	for c := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := clientRand(r.cfg.Seed, c)
			p, err := r.spawn(context.Background(), c, rng)
			out[c] = spawned{p, err, rng}
		}()
	}
	wg.Wait()
	r.mu.Lock()
	r.prepared = out
	r.mu.Unlock()
}

// clientRand is the seeded source of client c's incarnations.
func clientRand(seed int64, c int) *rand.Rand {
	return rand.New(rand.NewSource(seed*1_000_003 + int64(c)*7919 + 1))
}

// first takes the process Prepare started for client c, if any.
func (r *Runner) first(c int) (spawned, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c >= len(r.prepared) {
		return spawned{}, false
	}
	s := r.prepared[c]
	r.prepared[c] = spawned{}
	return s, s.rng != nil
}

// client runs incarnations of one client until ctx ends.
func (r *Runner) client(ctx, ops context.Context, w Workload, c int) {
	rng := clientRand(r.cfg.Seed, c)
	for incarnation := 0; ctx.Err() == nil; incarnation++ {
		var p *Process
		var err error
		if s, ok := r.first(c); ok && incarnation == 0 {
			p, err, rng = s.p, s.err, s.rng
		} else {
			p, err = r.spawn(ctx, c, rng)
		}
		if fatal(err) {
			r.fail(err)
			return
		}
		if err != nil {
			r.cfg.Logf("client %d: %v", c, err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		err = r.live(ctx, ops, w, p)
		r.retire(p, err)
	}
}

// live runs iterations until the process dies or ctx ends.
func (r *Runner) live(ctx, ops context.Context, w Workload, p *Process) error {
	// A lock or gate shared by several clients tells them apart by it.
	ops = context.WithValue(locks.WithClient(ops, p.Client), procKey{}, p)
	for ctx.Err() == nil {
		if err := w.Step(ops, p); err != nil {
			return err
		}
	}
	return nil
}

// retire ends a process: a crash or abandon is recorded, its renewals stop,
// its connections close (its keys stay in Redis, as after kill -9).
func (r *Runner) retire(p *Process, err error) {
	r.mu.Lock()
	if r.current[p.Client] == p {
		delete(r.current, p.Client)
	}
	r.mu.Unlock()
	if p.shared != nil && p.shared.dead() && !fatal(err) && !errors.Is(err, ErrCrashed) && !errors.Is(err, ErrAbandon) {
		// Its group was killed as the run ended, and this client saw the
		// end first: it died with the others all the same, and the
		// history says so for every client of the group.
		err = ErrCrashed
	}
	if fatal(err) {
		r.fail(err)
	} else if errors.Is(err, ErrCrashed) || errors.Is(err, ErrAbandon) {
		r.stats.Crashes.Add(1)
		r.cfg.Recorder.Info(history.Event{Op: history.Crash, Client: p.Client, Process: p.ID(), Error: err.Error()})
	} else if err != nil {
		r.cfg.Logf("client %d: %v", p.Client, err)
	}
	r.dropHolds(p.Client)
	if p.shared != nil {
		r.groupOf(p.Client).leave(p, err != nil)
		return
	}
	r.end(p.Client, p.Gate, p.Lock, p.Nodes)
}

// fatal reports whether err must end the run (a lock program that broke
// its protocol): see locks.FatalError.
func fatal(err error) bool {
	var f *locks.FatalError
	return errors.As(err, &f)
}

// fail ends the run with err; the first such error is the run's (Err).
func (r *Runner) fail(err error) {
	r.mu.Lock()
	abort := r.abort
	if r.failed == nil {
		r.failed = err
	}
	r.mu.Unlock()
	if abort != nil {
		abort(err)
	}
}

// Err is the error that ended the run early, if a lock reported one it
// cannot go on from (a *locks.FatalError); nil otherwise.
func (r *Runner) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func closeAll(nodes []redis.UniversalClient) {
	for _, n := range nodes {
		_ = n.Close()
	}
}

// renewHook records a watchdog's renewals. They run beside the process's
// own loop, so they go under a process id of their own.
func (p *Process) renewHook() func(*locks.Lease) func(error) {
	return func(l *locks.Lease) func(error) {
		inv := p.r.cfg.Recorder.Invoke(history.Event{Op: history.Refresh, Client: p.Client,
			Process: p.r.watchdogPID(p), Key: l.Key, Lease: l.Token, TTLMillis: l.TTL.Milliseconds()})
		return func(err error) {
			t := Outcome(err)
			p.r.cfg.Recorder.Complete(inv, t, history.Event{Error: errText(err)})
			if t == history.Unknown {
				p.r.stats.Unknown.Add(1)
				p.r.retireWatchdogPID(p)
			}
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (r *Runner) watchdogPID(p *Process) int {
	if id := p.watchdog.Load(); id != 0 {
		return int(id)
	}
	id := int64(r.newProcessID())
	if !p.watchdog.CompareAndSwap(0, id) {
		return int(p.watchdog.Load())
	}
	return int(id)
}

func (r *Runner) retireWatchdogPID(p *Process) { p.watchdog.Store(0) }

// LastToken is the token of the process's latest acquire attempt: the lease
// an acquire with an unknown outcome may have left in Redis.
func (p *Process) LastToken() string {
	if p.shared != nil {
		// The shared lock asks for tokens of whichever client calls:
		// the latest may be another's when two acquire at once.
		return p.shared.lastToken.Load().(string)
	}
	return p.lastToken.Load().(string)
}

// hold and unhold track who believes it holds each key right now, so the
// status line can count overlaps while the run goes on.
func (r *Runner) hold(key, lease string, client int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := inner(r.holders, key)
	for _, c := range m {
		if c != client {
			r.stats.Overlaps.Add(1)
			break
		}
	}
	m[lease] = client
}

func (r *Runner) unhold(key, lease string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.holders[key], lease)
}

func (r *Runner) dropHolds(client int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.holders {
		for l, c := range m {
			if c == client {
				delete(m, l)
			}
		}
	}
}

// Clients is the number of clients.
func (r *Runner) Clients() int { return r.cfg.Clients }

// inner returns m[k], made and stored first where it is missing.
func inner[K, K2 comparable, V any](m map[K]map[K2]V, k K) map[K2]V {
	in := m[k]
	if in == nil {
		in = map[K2]V{}
		m[k] = in
	}
	return in
}
