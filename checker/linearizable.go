package checker

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

// LinearizableOptions configure the linearizability checker.
type LinearizableOptions struct {
	// Timeout bounds the whole search; when it runs out the verdict is
	// Unknown. Zero means 30 seconds.
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
	// the run's ttl (or the largest acquire ttl, or 1s).
	UnknownHorizon time.Duration
}

// DefaultLinearizableTimeout is the search's time budget when the options
// give none.
const DefaultLinearizableTimeout = 30 * time.Second

// Linearizable returns the checker that asks porcupine whether the lock
// operations on each key can be ordered, each at an instant within its own
// call and return, so that an owner-aware lease mutex allows the order (see
// stepLock). It catches what the interval checks cannot: a release that
// deleted someone else's live lease, a refresh or release that found its
// own live key gone, an acquire granted while another lease was surely in
// force even if the victim never acted on the lock again.
//
// Operations whose outcome is unknown may take effect at any time after
// their call, or never. Letting porcupine try that at every later position
// makes the search explode, so a key is searched in up to three ways (see
// searchMode): first with every such operation taking effect no later than
// UnknownHorizon after its client gave up, which finds a legal order of a
// healthy history quickly; if that fails, with the acquires of unknown
// outcome relaxed away, which proves a broken history broken just as
// quickly; and only if these two disagree, exactly.
func Linearizable(o LinearizableOptions, opts ...Option) Checker {
	return newLockChecker("linearizable", opts, newLinearizable(o).judge)
}

// newLinearizable is the search of Linearizable, o's zero values set to
// their defaults.
func newLinearizable(o LinearizableOptions) *linearizable {
	if o.Timeout <= 0 {
		o.Timeout = DefaultLinearizableTimeout
	}
	if o.SegmentOps <= 0 {
		o.SegmentOps = 500
	}
	return &linearizable{o: o}
}

type linearizable struct{ o LinearizableOptions }

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

func (l *linearizable) judge(ctx context.Context, c *collector, ix *index) {
	// Cancellation stops the model (every step fails, the search unwinds);
	// the time budget is enforced by porcupine itself, which stops at once.
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	deadline := time.Now().Add(l.o.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	horizon := int64(l.o.UnknownHorizon)
	if horizon <= 0 {
		horizon = ix.ttl()
	}

	km := &keyModel{leases: []leaseMeta{{id: "none", client: -1, process: -1, op: -1}}}
	checks := make([]*keyCheck, len(ix.keys))
	for i, key := range ix.keys {
		checks[i] = l.inputs(ix, key, km)
	}
	// Keys are independent: search them in parallel.
	work := make(chan *keyCheck)
	var wg sync.WaitGroup
	for range max(1, min(runtime.GOMAXPROCS(0), len(checks))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for kc := range work {
				l.decide(ctx, kc, km, horizon, deadline, &stop)
			}
		}()
	}
	for _, kc := range checks {
		work <- kc
	}
	close(work)
	wg.Wait()

	var ops, dropped, unknown, segments, maxStates, relaxed, exact int64
	var failed []*keyCheck
	var undecided []string
	for _, kc := range checks {
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
		switch kc.verdict {
		case Invalid:
			failed = append(failed, kc)
		case Unknown:
			s := kc.key
			if kc.boundedFailed {
				s += fmt.Sprintf(" (no legal order if operations of unknown outcome take effect within %s of being abandoned", fmtDur(horizon))
				if kc.searches > 2 {
					s += ", but one if acquires of unknown outcome are left out"
				}
				s += ")"
			}
			undecided = append(undecided, s)
		}
	}
	c.stat("partitions", int64(len(checks)))
	c.stat("operations", ops)
	c.stat("skipped_failed", dropped)
	c.stat("unknown_outcome", unknown)
	c.stat("segments", segments)
	c.stat("max_states_at_cut", maxStates)
	c.stat("relaxed_searches", relaxed)
	c.stat("exact_searches", exact)
	if len(undecided) > 0 {
		why := "was cancelled"
		if ctx.Err() == nil || ctx.Err() == context.DeadlineExceeded {
			why = fmt.Sprintf("ran out of its %v budget", l.o.Timeout)
		}
		c.fail(fmt.Sprintf("the linearizability search %s before deciding %d key(s): %s", why, len(undecided), strings.Join(undecided, ", ")))
	}
	if len(failed) > 0 {
		l.explain(c, km, failed, deadline, ix.faults)
	}
}

// inputs turns a key's lock operations into model inputs. Failed acquires
// and releases change nothing in any state, so they are left out: that
// drops most of the concurrency a contended key has, which is what makes
// the search expensive.
func (l *linearizable) inputs(ix *index, key string, km *keyModel) *keyCheck {
	k := ix.perKey[key]
	kc := &keyCheck{key: key, rows: map[int]int{}}
	ids := map[string]int32{}
	leaseID := func(o *history.Operation) int32 {
		if id, ok := ids[o.Lease]; ok {
			return id
		}
		id := int32(len(km.leases))
		ids[o.Lease] = id
		m := leaseMeta{id: o.Lease, client: o.Client, process: o.Process, op: -1}
		if le := k.byLease[o.Lease]; le != nil && le.acquire >= 0 {
			a := &ix.ops[le.acquire]
			m.client, m.process, m.op = a.Client, a.Process, le.acquire
		}
		km.leases = append(km.leases, m)
		return id
	}
	for _, i := range k.lockOps {
		o := &ix.ops[i]
		if o.Status == history.Fail && (o.Op == history.Acquire || o.Op == history.Release) {
			kc.dropped++
			continue
		}
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
				if le := k.byLease[o.Lease]; le != nil {
					in.ttl = le.ttl
				}
			}
		}
		if o.Status == history.Unknown {
			kc.unknown++
			for _, w := range ix.faults {
				if w.Start <= o.Return && w.End >= o.Call {
					in.healed = max(in.healed, w.End)
				}
			}
		} else {
			kc.end = max(kc.end, o.Return+1)
		}
		in.lease = leaseID(o)
		if le := k.byLease[o.Lease]; le != nil && le.acquire >= 0 && ix.ops[le.acquire].Status == history.Unknown {
			in.orphan = true
		}
		if _, ok := kc.rows[o.Process]; !ok {
			kc.rows[o.Process] = len(kc.rows) + 1 // row 0 holds the cuts
		}
		kc.ins = append(kc.ins, in)
	}
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
	if kc.ghostly {
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
	kc.bound()
	return kc
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
