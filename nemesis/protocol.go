// The clients' protocol steps as faults see them: the events a fault can
// wait for and aim at (an acquire, a hold, a point between two commands),
// and Watch, the Protocol a run feeds from its workload, so that a fault
// lands on the step that breaks a lock rather than at a random moment.

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// StepKind says which protocol step a ProtocolEvent reports.
type StepKind string

// The protocol steps faults can aim at.
const (
	// Acquiring: a client invoked an acquire and is about to send it.
	Acquiring StepKind = "acquiring"
	// Acquired: an acquire returned ok; the client holds a lease and has
	// not begun its work.
	Acquired StepKind = "acquired"
	// Releasing: a client invoked a release and is about to send it.
	Releasing StepKind = "releasing"
	// Released: a client's release returned, whatever its outcome. Until
	// then the key counts as held (Filter.Free): an attempt made while the
	// release is on its way loses on the master, and its replicas may still
	// have the key after a cut made at it.
	Released StepKind = "released"
	// Point: a client reached a named point of its protocol (attempt,
	// between-setnx-and-pexpire, hold, release...).
	Point StepKind = "point"
)

// ProtocolEvent is one step of one client's lock protocol.
type ProtocolEvent struct {
	Kind    StepKind
	Client  int
	Process int
	// N counts the client's events of this kind (and point) over the whole
	// run, from 1: "client 3, its 5th acquire" whatever the timing.
	N     int
	Point string
	// Key is the lock key the client asks for, as the history names it;
	// Stored, when set, the key its lock writes in Redis for it (a
	// library that names its own keys). What a fault reads on the servers
	// is StoredKey.
	Key    string
	Stored string
	Lease  string
	// TTL of the lease; Expires, on Acquired, the latest instant the lease
	// can still live in Redis (zero: no expiry).
	TTL     time.Duration
	Expires time.Time
	// Hold, on Acquired, is how long the holder means to work before it
	// releases (the workload's draw; 0 when its workload does not say): a
	// fault that needs the lease held a while can pick a long hold.
	Hold time.Duration
	At   time.Time
	// Gate is the client process at this step.
	Gate Gate
	// Planned is the N the fault aimed at; N > Planned when that step had
	// passed before the fault began to wait (the event is the next one).
	// -1: the fault found the event already there (a lease held) and did
	// not wait.
	Planned int
	// Other: the client aimed at did not reach its step in time (a client
	// starved of the lock); this is the next such step of any client.
	Other bool
	// Unawaited: a Point whose command had gone out when the step was
	// told (a lock program's request that did not await its go, as no
	// fault was armed for it when it began). It is counted, and its point
	// known, but no fault takes it: nothing can land before its command.
	Unawaited bool
	late      bool
}

// StoredKey is the key the event's lease is (or is to be) written under
// in Redis: Stored, else Key.
func (e ProtocolEvent) StoredKey() string {
	if e.Stored != "" {
		return e.Stored
	}
	return e.Key
}

// Late reports whether the event came after the step the fault aimed at,
// or from another client.
func (e ProtocolEvent) Late() bool { return e.Other || e.late }

// Filter says which protocol event a fault waits for.
type Filter struct {
	Kind StepKind
	// Client to watch; -1 for any client.
	Client int
	// Points restricts Point events to these names (any when empty).
	Points []string
	// Skip is how many matching events to let pass first. For one client
	// the step aimed at is numbered: Skip+1 after the client's last step
	// of this kind (and point) a fault took, or after the warm-up, so the
	// seed fixes it ("client 3, its 7th acquire"), not when the wait
	// began.
	Skip int
	// Next: the client's next such step, whatever its number.
	Next bool
	// Free: only a step taken while no other client holds the event's
	// key, by their own account: an attempt that will win the lock, a
	// reentrant lock's nested acquire included. While its Act runs, the
	// other clients' points on that key wait: an attempt of theirs sent
	// meanwhile (another waiter trying the same free key) would reach the
	// servers before what the Act sets up, and might win the key there.
	Free bool
	// Act, when set, runs in the client's own goroutine at the step,
	// before the client goes on: a fault that must land exactly there (a
	// pause right after the acquire, a toxic before the command is sent)
	// acts in it. It must be quick and must not block on the client.
	Act func(ProtocolEvent)
}

// what names the step f waits for in a message: the point names when it
// waits for points ("point attempt or between-setnx-and-pexpire"), so that
// a fault that gives up says which step never came.
func (f Filter) what() string {
	if f.Kind != Point || len(f.Points) == 0 {
		return string(f.Kind)
	}
	return string(f.Kind) + " " + strings.Join(f.Points, " or ")
}

// Protocol lets faults wait for the protocol steps of the run's clients.
type Protocol interface {
	// Next blocks until an event matching f happens, runs f.Act on it and
	// returns it; it returns ctx's error if ctx ends first.
	Next(ctx context.Context, f Filter) (ProtocolEvent, error)
	// Points lists the protocol points any client has reached, sorted.
	Points() []string
	// Held lists, by client, the Acquired event of each lease a client
	// holds now (acquired and not yet released, by its own account).
	Held() []ProtocolEvent
}

// ErrNoTarget is returned, wrapped, by a fault's Start when nothing it could
// aim at turned up in time: it took no effect, and the schedule counts it
// as given up.
var ErrNoTarget = errors.New("no target")

// Watch is the Protocol of a run: the workload reports each step to Emit,
// and the faults waiting in Next get the first that matches.
type Watch struct {
	warmup int

	mu      sync.Mutex
	counts  map[stepKey]int
	cursor  map[stepKey]int // the last N of each client, kind and point a fault took
	points  map[string]bool
	waiters []*waiter
	// lease each client holds (from its acquire's return to its release)
	// or is acquiring, so a point event says what is at stake there.
	lease map[int]ProtocolEvent
	// gates: the keys whose free attempt's Act runs now (see Filter.Free),
	// closed when it has run.
	gates map[string]gate
}

// gate holds the other clients' points on a key while client's Act runs.
type gate struct {
	client int
	done   chan struct{}
}

type stepKey struct {
	kind   StepKind
	client int
	point  string
}

type waiter struct {
	f      Filter
	late   bool // the step aimed at had passed when the wait began
	target int  // for one client's counted steps: the N aimed at; else 0
	skip   int  // otherwise: events still to let pass
	got    chan ProtocolEvent
}

// NewWatch returns a Watch whose first aim at each client lets warmup of
// its events of each kind pass first: a quiet warm-up counted in protocol
// steps, so that it ends at the same step on every rerun of a seed.
func NewWatch(warmup int) *Watch {
	return &Watch{warmup: max(0, warmup), counts: map[stepKey]int{}, cursor: map[stepKey]int{}, points: map[string]bool{}, lease: map[int]ProtocolEvent{},
		gates: map[string]gate{}}
}

func (f Filter) matches(e *ProtocolEvent) bool {
	if e.Kind != f.Kind || (f.Client >= 0 && e.Client != f.Client) {
		return false
	}
	if e.Kind != Point || len(f.Points) == 0 {
		return true
	}
	for _, p := range f.Points {
		if p == e.Point {
			return true
		}
	}
	return false
}

// Emit reports one step; it runs the Act of the fault it wakes, in the
// caller's goroutine.
func (w *Watch) Emit(e ProtocolEvent) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	k := stepKey{e.Kind, e.Client, e.Point}
	w.mu.Lock()
	w.awaitGateLocked(e)
	w.counts[k]++
	e.N = w.counts[k]
	switch e.Kind {
	case Point:
		w.points[e.Point] = true
		if l, ok := w.lease[e.Client]; ok && e.Key == "" {
			e.Key, e.Stored, e.Lease, e.TTL, e.Expires = l.Key, l.Stored, l.Lease, l.TTL, l.Expires
		}
	case Acquiring, Acquired, Releasing:
		w.lease[e.Client] = e
	case Released:
		delete(w.lease, e.Client)
	}
	var hit *waiter
	for i, wt := range w.waiters {
		if e.Unawaited || !wt.f.matches(&e) || wt.f.Free && w.heldByOtherLocked(e.Key, e.Client) {
			continue
		}
		if wt.target > 0 {
			if e.N < wt.target {
				continue
			}
			e.Planned, e.late = wt.target, wt.late
			w.cursor[k] = e.N
		} else if wt.skip > 0 {
			wt.skip--
			continue
		}
		hit = wt
		w.waiters = append(w.waiters[:i], w.waiters[i+1:]...)
		break
	}
	var g gate
	if hit != nil && hit.f.Act != nil && hit.f.Free && e.Key != "" {
		g = gate{client: e.Client, done: make(chan struct{})}
		w.gates[e.Key] = g
	}
	w.mu.Unlock()
	if hit == nil {
		return
	}
	if hit.f.Act != nil {
		hit.f.Act(e)
	}
	if g.done != nil {
		w.mu.Lock()
		delete(w.gates, e.Key)
		w.mu.Unlock()
		close(g.done)
	}
	hit.got <- e
}

// awaitGateLocked waits, w.mu held (and let go meanwhile), while a free
// attempt's Act runs on the key of e, a point of another client.
func (w *Watch) awaitGateLocked(e ProtocolEvent) {
	for e.Kind == Point && !e.Unawaited {
		key := e.Key
		if l, ok := w.lease[e.Client]; ok && key == "" {
			key = l.Key
		}
		g, ok := w.gates[key]
		if !ok || key == "" || g.client == e.Client {
			return
		}
		w.mu.Unlock()
		<-g.done
		w.mu.Lock()
	}
}

// Next implements Protocol.
func (w *Watch) Next(ctx context.Context, f Filter) (ProtocolEvent, error) {
	if f.Kind == "" {
		return ProtocolEvent{}, errors.New("protocol filter without a step kind")
	}
	wt := &waiter{f: f, got: make(chan ProtocolEvent, 1), skip: max(0, f.Skip)}
	w.mu.Lock()
	// One client's steps are counted (one point at a time); the others
	// are taken as they come.
	if f.Client >= 0 && !f.Next && (f.Kind != Point || len(f.Points) == 1) {
		point := ""
		if f.Kind == Point {
			point = f.Points[0]
		}
		// Counted from the client's last step of this kind a fault
		// took, or from the warm-up: the seed alone says which step it
		// is. A client that went further meanwhile is hit at its next.
		base := max(w.warmup, w.cursor[stepKey{f.Kind, f.Client, point}])
		wt.target = base + max(0, f.Skip) + 1
		if n := w.counts[stepKey{f.Kind, f.Client, point}]; n >= wt.target {
			wt.target, wt.late = n+1, true
		}
	}
	w.waiters = append(w.waiters, wt)
	w.mu.Unlock()
	select {
	case e := <-wt.got:
		return e, nil
	case <-ctx.Done():
	}
	w.mu.Lock()
	for i, x := range w.waiters {
		if x == wt {
			w.waiters = append(w.waiters[:i], w.waiters[i+1:]...)
			w.mu.Unlock()
			return ProtocolEvent{}, ctx.Err()
		}
	}
	w.mu.Unlock()
	// Emit took it as ctx ended: its Act ran, so the event is the answer.
	return <-wt.got, nil
}

// Points implements Protocol.
func (w *Watch) Points() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.points))
}

// heldByOtherLocked reports whether a client other than client holds key
// or is releasing it; w.mu is held.
func (w *Watch) heldByOtherLocked(key string, client int) bool {
	for c, e := range w.lease {
		if c != client && (e.Kind == Acquired || e.Kind == Releasing) && e.Key == key {
			return true
		}
	}
	return false
}

// Waiting reports whether a fault waits for a step now. A run starts its
// clients once its first aimed fault waits, so that the fault can meet the
// run's very first steps (the first free attempt on a key, before any
// lock exists).
func (w *Watch) Waiting() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.waiters) > 0
}

// Held implements Protocol.
func (w *Watch) Held() []ProtocolEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []ProtocolEvent
	for _, e := range w.lease {
		if e.Kind == Acquired {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Client < out[j].Client })
	return out
}

// Aim is what one fault start aimed at, for the history's fault-start event
// and the run's counts.
type Aim struct {
	// Client aimed at, -1 for none.
	Client int
	Key    string
	Lease  string
	// Node the fault acts on, by name ("" for none).
	Node string
	// Step describes the protocol step ("its 5th acquire").
	Step string
	// Waited: the fault waited for the protocol to reach its target.
	Waited bool
	// Late: the step aimed at had passed; the fault took the next one.
	Late bool
}

// aimAt describes the aim at event e.
func aimAt(e ProtocolEvent) Aim {
	return Aim{Client: e.Client, Key: e.Key, Lease: e.Lease, Step: describeStep(e), Waited: e.Planned >= 0, Late: e.Late()}
}

func describeStep(e ProtocolEvent) string {
	what := string(e.Kind)
	switch e.Kind {
	case Acquiring:
		what = "acquire invoked"
	case Acquired:
		what = "acquire ok"
	case Releasing:
		what = "release invoked"
	case Released:
		what = "release returned"
	case Point:
		what = e.Point
	}
	return fmt.Sprintf("%s %s #%d", ClientName(e.Client), what, e.N)
}

// Aimer is implemented by the Marker a schedule hands a fault: the fault
// tells it what it aimed at before it calls Began.
type Aimer interface{ Aimed(Aim) }

// aimed tells mark what the fault aimed at, if mark records aims.
func aimed(mark Marker, a Aim) {
	if m, ok := mark.(Aimer); ok {
		m.Aimed(a)
	}
}

// aiming reports whether faults aim at the protocol on t (the default),
// rather than choosing blindly (--target random, or no protocol to watch).
func (t *Target) aiming() bool { return t.Protocol != nil && !t.Blind }

// aimsAtClients reports whether faults aim on t and there is a client to
// aim at: a fault that waits for a client's step falls back to its blind
// form without one.
func (t *Target) aimsAtClients() bool {
	return t.aiming() && t.Clients != nil && t.Clients.Count() > 0
}

// patience is how long a fault waits for its target before it gives up.
func (t *Target) patience() time.Duration {
	if t.Patience > 0 {
		return t.Patience
	}
	return max(20*t.TTL, 5*time.Second)
}

// next waits, within the target's patience, for an event matching f. A
// client that does not reach its step within a share of the patience (a
// client the others starve of the lock) is given up for the next such step
// of any client.
func (t *Target) next(ctx context.Context, f Filter) (ProtocolEvent, error) {
	patience := t.patience()
	deadline := time.Now().Add(patience)
	other := false
	if f.Client >= 0 {
		wctx, cancel := context.WithTimeout(ctx, t.clientPatience(patience))
		e, err := t.Protocol.Next(wctx, f)
		cancel()
		if err != nil && ctx.Err() != nil {
			return e, &WaitError{For: "a step " + f.what() + " of " + who(f.Client), Err: err}
		}
		if err == nil {
			return e, nil
		}
		f.Client, f.Skip, other = -1, 0, true
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	e, err := t.Protocol.Next(wctx, f)
	if err != nil && ctx.Err() == nil {
		return e, fmt.Errorf("%w: no %s of any client within %v", ErrNoTarget, f.what(), patience)
	}
	if err != nil {
		return e, &WaitError{For: "a step " + f.what() + " of " + who(f.Client), Err: err}
	}
	e.Other = other
	return e, err
}

// clientPatience is how long a fault waits for the one client it aims at,
// within the whole patience: Target.ClientPatience, else four TTLs, at
// least a second. Long enough that a client slowed by the others'
// contention usually gets there (the same step on a rerun), short enough
// that one the others starve of the lock does not hold the fault up past a
// short run's end.
func (t *Target) clientPatience(patience time.Duration) time.Duration {
	if t.ClientPatience > 0 {
		return min(t.ClientPatience, patience)
	}
	return min(max(4*t.TTL, time.Second), patience)
}

func who(c int) string {
	if c < 0 {
		return "any client"
	}
	return ClientName(c)
}

// aimSkip draws how many of a client's steps a fault lets pass before its
// own: a few, so faults keep coming, and varied by the seed.
func aimSkip(rng interface{ Intn(int) int }) int { return 1 + rng.Intn(3) }
