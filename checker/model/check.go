package model

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktorture/locktorture/history"
)

// Check, the search over every key of a history, and the inputs it is
// given: what a caller must know of a history to have it checked, and the
// plain result it gets back.

// Options configure the search.
type Options struct {
	// Timeout bounds the whole search; when it runs out the key's verdict
	// is Unknown. Zero means DefaultTimeout.
	Timeout time.Duration
	// VisualizationPath is where porcupine's HTML rendering of the keys
	// that are not linearizable goes (their failing segment, with the
	// longest legal orders porcupine found). Empty: none is written.
	VisualizationPath string
	// SegmentOps is how many lock operations of a key one porcupine search
	// takes at most before the key is cut into segments (segments.go says
	// why). Zero means 500.
	SegmentOps int
	// UnknownHorizon is how long after its client gave up (or after a fault
	// active meanwhile healed, whichever is later) an operation of unknown
	// outcome may take effect in the first, fast search. If that search
	// finds no legal order, searches without the bound decide. Zero means
	// Input.TTL.
	UnknownHorizon time.Duration
}

// DefaultTimeout is the search's time budget when the options give none.
const DefaultTimeout = 30 * time.Second

// Input is what the search reads of a history: its operations, each key's
// lock operations among them, and the faults. The caller has paired the
// events into operations and named every operation's lease.
type Input struct {
	Ops    []history.Operation
	Keys   []Key
	Faults []history.Window
	// TTL is the run's lease ttl, the default UnknownHorizon.
	TTL int64
}

// Key is one key's lock operations: acquires, releases, refreshes, and the
// nested ones of nested leases.
type Key struct {
	Name string
	// LockOps are indices into Input.Ops, in call order.
	LockOps []int
	// Leases are the key's acquired leases by id.
	Leases map[string]Lease
}

// Lease is what the model needs of a lease besides its operations.
type Lease struct {
	// Acquire is its acquire's index into Input.Ops, -1 if the history
	// never acquired it.
	Acquire int
	// TTL is what it was acquired with: a refresh that names none renews
	// it by as much.
	TTL int64
}

// Verdict is how the search settled a key.
type Verdict uint8

const (
	// Unknown: the search was cancelled or ran out of time.
	Unknown Verdict = iota
	// Valid: some order of the key's operations is legal.
	Valid
	// Invalid: none is.
	Invalid
)

// String names the verdict as package checker's verdicts read.
func (v Verdict) String() string {
	switch v {
	case Valid:
		return "valid"
	case Invalid:
		return "invalid"
	}
	return "unknown"
}

// Result is what a check found, for the caller to report as it likes.
type Result struct {
	// Stats count what the search did, by name.
	Stats []Stat
	// Errors say why some keys were left undecided, or why the
	// visualization could not be written.
	Errors []string
	// Findings are the keys found not linearizable, one each.
	Findings []Finding
	// Keys are the verdicts per key, in Input.Keys' order.
	Keys []KeyResult
}

// Stat is one count of Result.Stats.
type Stat struct {
	Name  string
	Value int64
}

// Finding names the operation of a key that no legal order could place,
// and who took part: StartNS to EndNS is the culprit's call to return.
// Without a culprit only Key and Detail are set.
type Finding struct {
	Key            string
	StartNS, EndNS int64
	Clients        []int
	Processes      []int
	Leases         []string
	Detail         string
}

// KeyResult is one key's verdict and how it was reached.
type KeyResult struct {
	Key     string
	Verdict Verdict
	// Ghostly: the one relaxed search was exact and decided (see ghostly).
	Ghostly bool
	// Searches is how many searches it took: 1 bounded (or relaxed, if
	// ghostly), 2 with the relaxed one, 3 with the exact one.
	Searches int
}

// Check asks porcupine whether the lock operations on each key can be
// ordered, each at an instant within its own call and return, so that an
// owner-aware lease mutex allows the order (see stepLock). It catches what
// interval checks cannot: a release that deleted someone else's live
// lease, a refresh or release that found its own live key gone, an acquire
// granted while another lease was surely in force even if the victim never
// acted on the lock again.
//
// Operations whose outcome is unknown may take effect at any time after
// their call, or never. Letting porcupine try that at every later position
// makes the search explode, so a key is searched in up to three ways (see
// searchMode): first with every such operation taking effect no later than
// UnknownHorizon after its client gave up, which finds a legal order of a
// healthy history quickly; if that fails, with the acquires of unknown
// outcome relaxed away, which proves a broken history broken just as
// quickly; and only if these two disagree, exactly.
func Check(ctx context.Context, o Options, in Input) Result {
	l := newLinearizable(o)
	deadline := l.deadline(ctx)
	horizon := int64(l.o.UnknownHorizon)
	if horizon <= 0 {
		horizon = in.TTL
	}
	km := newKeyModel()
	checks := make([]*keyCheck, len(in.Keys))
	for i := range in.Keys {
		checks[i] = l.inputs(&in, &in.Keys[i], km)
	}
	parallel(ctx, checks, func(kc *keyCheck, stop *atomic.Bool) {
		l.decide(ctx, kc, km, horizon, deadline, stop)
	})
	r := l.summarize(ctx, checks, horizon)
	var failed []*keyCheck
	for _, kc := range checks {
		if kc.verdict == Invalid {
			failed = append(failed, kc)
		}
	}
	if len(failed) > 0 {
		l.explain(&r, km, failed, deadline, in.Faults)
	}
	return r
}

// newLinearizable is the search of Check, o's zero values set to their
// defaults.
func newLinearizable(o Options) *linearizable {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.SegmentOps <= 0 {
		o.SegmentOps = 500
	}
	return &linearizable{o: o}
}

type linearizable struct{ o Options }

// deadline is when the search must stop: its time budget from now, or the
// context's deadline if that is earlier.
func (l *linearizable) deadline(ctx context.Context) time.Time {
	deadline := time.Now().Add(l.o.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return deadline
}

// newKeyModel is the descriptions' lease table, lease 0 standing for none.
func newKeyModel() *keyModel {
	return &keyModel{leases: []leaseMeta{{id: "none", client: -1, process: -1, op: -1}}}
}

// parallel runs search on every key, since keys are independent, on as
// many goroutines as there are processors. Cancellation stops the model
// (every step fails, the search unwinds); the time budget is enforced by
// porcupine itself, which stops at once.
func parallel(ctx context.Context, checks []*keyCheck, search func(*keyCheck, *atomic.Bool)) {
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	work := make(chan *keyCheck)
	var wg sync.WaitGroup
	for range max(1, min(runtime.GOMAXPROCS(0), len(checks))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for kc := range work {
				search(kc, &stop)
			}
		}()
	}
	for _, kc := range checks {
		work <- kc
	}
	close(work)
	wg.Wait()
}

// keyCheck is one key's search: its model inputs and how it ended.
type keyCheck struct {
	key     string
	ins     []*lockInput
	rows    map[int]int // process -> porcupine client row
	dropped int
	unknown int
	// end is after every known completion: the kEnd marker's time.
	end int64

	// searched is what the last search ran on (the relaxed search leaves
	// some inputs out), and mode how.
	searched  []*lockInput
	mode      searchMode
	searches  int
	segments  int
	maxStates int
	verdict   Verdict
	// ghostly: the relaxed search is exact (see ghostly).
	ghostly bool
	// boundedFailed: the bounded search found no order, and the key was
	// decided (or not) by the relaxed and exact ones.
	boundedFailed bool
	// On Invalid: the segment no order got through, and the states it was
	// searched from.
	failed *segment
	from   []lockState
}

// summarize counts what the searches did, and says which keys they left
// undecided and why.
func (l *linearizable) summarize(ctx context.Context, checks []*keyCheck, horizon int64) Result {
	var r Result
	var ops, dropped, unknown, segments, maxStates, relaxed, exact int64
	var undecided []string
	for _, kc := range checks {
		r.Keys = append(r.Keys, KeyResult{Key: kc.key, Verdict: kc.verdict, Ghostly: kc.ghostly, Searches: kc.searches})
		ops += int64(len(kc.ins))
		dropped += int64(kc.dropped)
		unknown += int64(kc.unknown)
		segments += int64(kc.segments)
		maxStates = max(maxStates, int64(kc.maxStates))
		if kc.searches > 1 {
			relaxed++
		}
		if kc.searches > 2 {
			exact++
		}
		if kc.verdict == Unknown {
			undecided = append(undecided, kc.undecided(horizon))
		}
	}
	r.Stats = []Stat{{"partitions", int64(len(checks))}, {"operations", ops}, {"skipped_failed", dropped},
		{"unknown_outcome", unknown}, {"segments", segments}, {"max_states_at_cut", maxStates},
		{"relaxed_searches", relaxed}, {"exact_searches", exact}}
	if len(undecided) > 0 {
		why := "was cancelled"
		if ctx.Err() == nil || ctx.Err() == context.DeadlineExceeded {
			why = fmt.Sprintf("ran out of its %v budget", l.o.Timeout)
		}
		r.Errors = append(r.Errors, fmt.Sprintf("the linearizability search %s before deciding %d key(s): %s", why, len(undecided), strings.Join(undecided, ", ")))
	}
	return r
}

// undecided names a key the search did not decide, with how far it got.
func (kc *keyCheck) undecided(horizon int64) string {
	s := kc.key
	if kc.boundedFailed {
		s += fmt.Sprintf(" (no legal order if operations of unknown outcome take effect within %s of being abandoned", history.FormatDuration(horizon))
		if kc.searches > 2 {
			s += ", but one if acquires of unknown outcome are left out"
		}
		s += ")"
	}
	return s
}

// inputs turns a key's lock operations into model inputs. Failed acquires
// and releases change nothing in any state, so they are left out: that
// drops most of the concurrency a contended key has, which is what makes
// the search expensive.
func (l *linearizable) inputs(x *Input, k *Key, km *keyModel) *keyCheck {
	kc := &keyCheck{key: k.Name, rows: map[int]int{}}
	ids := map[string]int32{}
	leaseID := func(o *history.Operation) int32 {
		if id, ok := ids[o.Lease]; ok {
			return id
		}
		id := int32(len(km.leases))
		ids[o.Lease] = id
		m := leaseMeta{id: o.Lease, client: o.Client, process: o.Process, op: -1}
		if le, ok := k.Leases[o.Lease]; ok && le.Acquire >= 0 {
			a := &x.Ops[le.Acquire]
			m.client, m.process, m.op = a.Client, a.Process, le.Acquire
		}
		km.leases = append(km.leases, m)
		return id
	}
	for _, i := range k.LockOps {
		o := &x.Ops[i]
		if o.Status == history.Fail && (o.Op == history.Acquire || o.Op == history.Release) {
			kc.dropped++
			continue
		}
		in := kc.input(x, k, o, i)
		in.lease = leaseID(o)
		if le, ok := k.Leases[o.Lease]; ok && le.Acquire >= 0 && x.Ops[le.Acquire].Status == history.Unknown {
			in.orphan = true
		}
		if _, ok := kc.rows[o.Process]; !ok {
			kc.rows[o.Process] = len(kc.rows) + 1 // row 0 holds the cuts
		}
		kc.ins = append(kc.ins, in)
	}
	kc.orphans()
	kc.bound()
	return kc
}

// input is the model input of o, the key's operation at index i of x.Ops,
// all but its lease and what depends on the key's other operations.
func (kc *keyCheck) input(x *Input, k *Key, o *history.Operation, i int) *lockInput {
	in := &lockInput{
		status: o.Status, call: o.Start(), ret: o.Return, gaveUp: o.Return, ttl: int64(o.TTL),
		client: o.Client, process: o.Process, op: i, bit: -1,
	}
	switch o.Op {
	case history.Acquire, history.NestedAcquire:
		in.kind = kAcquire
	case history.Release, history.NestedRelease:
		in.kind = kRelease
		in.deleted = o.Deleted != nil && *o.Deleted
	case history.Refresh:
		in.kind = kRefresh
		if in.ttl == 0 {
			if le, ok := k.Leases[o.Lease]; ok {
				in.ttl = le.TTL
			}
		}
	}
	if o.Status == history.Unknown {
		kc.unknown++
		for _, w := range x.Faults {
			if w.Start <= o.Return && w.End >= o.Call {
				in.healed = max(in.healed, w.End)
			}
		}
	} else {
		kc.end = max(kc.end, o.Return+1)
	}
	return in
}

// orphans tells every input when acquires of unknown outcome may have left
// a key nobody holds (lockInput.orphanFrom), and, when the relaxed search
// is exact, which ones (lockInput.ghostCalls).
func (kc *keyCheck) orphans() {
	orphans := history.Never
	for _, in := range kc.ins {
		if in.kind == kAcquire && in.status == history.Unknown {
			orphans = min(orphans, in.call)
		}
	}
	for _, in := range kc.ins {
		in.orphanFrom = orphans
	}
	kc.ghostly = ghostly(kc.ins)
	if !kc.ghostly {
		return
	}
	var calls []int64
	for _, in := range kc.ins {
		if in.kind == kAcquire && in.status == history.Unknown {
			calls = append(calls, in.call)
		}
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i] < calls[j] })
	for _, in := range kc.ins {
		in.ghostCalls = calls
	}
}

// ghostly reports whether no operation but its own acquire names the
// lease of an acquire of unknown outcome, as in every history the
// harness writes (a client goes on under a new process and a new token
// after one). Then the relaxed search is exact, and the only one needed:
// such an acquire taking effect never makes a later operation legal that
// was not legal without it (it only keeps others out), except a release
// that deleted a key nobody held, which the search lets each such acquire
// explain once (lockInput.ghostCalls) by taking effect just before it.
// Leaving these acquires out removes the choice of where each takes
// effect, which is what made the search explode around failovers, where
// dozens of them pile up.
func ghostly(ins []*lockInput) bool {
	orphans := map[int32]int{}
	for _, in := range ins {
		if in.kind == kAcquire && in.status == history.Unknown {
			orphans[in.lease]++
		}
	}
	if len(orphans) == 0 {
		return false
	}
	for _, in := range ins {
		if n, ok := orphans[in.lease]; ok && (in.kind != kAcquire || in.status != history.Unknown || n > 1) {
			return false
		}
	}
	return true
}
