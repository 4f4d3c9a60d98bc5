package checker

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
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
	if o.Timeout <= 0 {
		o.Timeout = DefaultLinearizableTimeout
	}
	if o.SegmentOps <= 0 {
		o.SegmentOps = 500
	}
	return &linearizable{o: o, s: newSettings(opts)}
}

type linearizable struct {
	o LinearizableOptions
	s settings
}

func (*linearizable) Name() string { return "linearizable" }

// Start implements Windowed: each window's events are judged afresh.
func (l *linearizable) Start() Judge { return indexJudge{l} }

func (l *linearizable) Check(ctx context.Context, h *history.History) Result {
	return l.checkIndex(ctx, newIndex(h))
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

func (l *linearizable) checkIndex(ctx context.Context, ix *index) Result {
	c := newCollector(l.Name(), l.s)
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
	return c.result()
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
		case history.Acquire:
			in.kind = kAcquire
		case history.Release:
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

// decide settles a key with the cheapest searches that can: the bounded
// one (a restriction: if it finds a legal order, there is one), then the
// relaxed one (a relaxation: if it finds none, there is none), and only if
// they disagree, the exact one. Without operations of unknown outcome the
// three are the same search, run once.
func (l *linearizable) decide(ctx context.Context, kc *keyCheck, km *keyModel, horizon int64, deadline time.Time, stop *atomic.Bool) {
	if kc.ghostly {
		l.search(ctx, kc, km, modeRelaxed, kc.prepare(modeRelaxed, horizon), deadline, stop)
		return
	}
	l.search(ctx, kc, km, modeBounded, kc.prepare(modeBounded, horizon), deadline, stop)
	if kc.verdict != Invalid || kc.unknown == 0 {
		return
	}
	kc.boundedFailed = true
	ins := kc.prepare(modeRelaxed, horizon)
	l.search(ctx, kc, km, modeRelaxed, ins, deadline, stop)
	if kc.verdict != Valid || len(ins) == len(kc.ins) {
		return // relaxing left nothing out: it was the exact search
	}
	l.search(ctx, kc, km, modeExact, kc.prepare(modeExact, horizon), deadline, stop)
}

// prepare sets the inputs up for a search in mode m and returns those it
// takes part in.
//
// In the relaxed and exact searches a release or refresh of unknown outcome
// gets a deadline instead of none: its lease cannot hold the lock after its
// last known renewal returned plus ttl (plus a ttl for each refresh of
// unknown outcome, which may have renewed it once more), and once the lease
// may have expired, applying it is dominated by not applying it (an expired
// holder allows everything a free lock does, and more). Within that window
// it may be a no-op anywhere. Without the deadline every such operation
// would stay pending to the end of the history and no segment could be cut
// after a few dozen of them.
func (kc *keyCheck) prepare(m searchMode, horizon int64) []*lockInput {
	var out []*lockInput
	for _, in := range kc.ins {
		in.mode, in.noop = m, false
		if in.status == history.Unknown {
			switch {
			case m == modeBounded:
				in.ret = min(max(in.gaveUp, in.healed), history.Never-horizon) + horizon // no overflow: porcupine needs call <= return
			case in.kind == kAcquire:
				if m == modeRelaxed {
					continue
				}
				in.ret = history.Never
			case in.orphan && m == modeRelaxed:
				continue // its lease never holds the lock in this search
			default:
				in.ret = max(in.expires, in.call)
				in.noop = in.ret < history.Never
			}
		}
		out = append(out, in)
	}
	return out
}

// bound sets, on each release or refresh of unknown outcome, when its lease
// surely stopped holding the lock (lockInput.expires).
func (kc *keyCheck) bound() {
	type life struct {
		until   int64 // last known renewal's return plus ttl
		extra   int64 // refreshes of unknown outcome
		ttl     int64
		endless bool
	}
	lives := map[int32]*life{}
	get := func(id int32) *life {
		if lives[id] == nil {
			lives[id] = &life{}
		}
		return lives[id]
	}
	for _, in := range kc.ins {
		l := get(in.lease)
		switch {
		case in.orphan || in.ttl <= 0 && (in.kind == kAcquire || in.status == history.OK && in.kind == kRefresh):
			l.endless = true // acquired at an unknown time, or never expires
		case in.kind == kAcquire && in.status == history.OK, in.kind == kRefresh && in.status == history.OK:
			l.until = max(l.until, in.ret+in.ttl)
			l.ttl = max(l.ttl, in.ttl)
		case in.kind == kRefresh && in.status == history.Unknown:
			l.extra++
			l.ttl = max(l.ttl, in.ttl)
		}
	}
	for _, in := range kc.ins {
		if in.status != history.Unknown || in.kind == kAcquire {
			continue
		}
		// A lease never acquired at all bounds at once: until is 0.
		l := get(in.lease)
		in.expires = history.Never
		if !l.endless && l.until < history.Never/2 && l.ttl < history.Never/(4*(l.extra+1)) {
			in.expires = l.until + l.extra*l.ttl
		}
	}
}

// search runs porcupine over the key's segments, carrying the set of states
// reachable at each cut into the next.
func (l *linearizable) search(ctx context.Context, kc *keyCheck, km *keyModel, mode searchMode, ins []*lockInput, deadline time.Time, stop *atomic.Bool) {
	kc.failed, kc.from, kc.searched, kc.mode = nil, nil, ins, mode
	kc.searches++
	target := l.o.SegmentOps
	if mode == modeExact && len(ins) <= maxWholeExact {
		// Probes explore every order of a segment, and in the exact search
		// every pending operation of unknown outcome doubles that; one
		// search of the whole key stops at the first legal order instead.
		target = 0
	}
	segs := buildSegments(ins, chooseCuts(ins, target))
	kc.segments = len(segs)
	states := []lockState{{}}
	for k := range segs {
		seg := &segs[k]
		kc.maxStates = max(kc.maxStates, len(states))
		bits := seg.bits()
		last := k == len(segs)-1
		var rec *recorder
		if !last {
			rec = newRecorder()
		}
		model := newModel(km, rec)
		step := model.Step
		model.Step = func(s, in, out any) (bool, any) {
			if stop.Load() {
				return false, s
			}
			return step(s, in, out)
		}
		ok := false
		for _, st := range states {
			left := time.Until(deadline)
			if left <= 0 || ctx.Err() != nil {
				kc.verdict = Unknown
				return
			}
			res := porcupine.CheckOperationsTimeout(model, kc.operations(seg, bits, st, k > 0, kProbe), left)
			if res == porcupine.Unknown || ctx.Err() != nil {
				kc.verdict = Unknown
				return
			}
			if res == porcupine.Ok {
				ok = true
				if last {
					break
				}
			}
		}
		if last {
			if ok {
				kc.verdict = Valid
			} else {
				kc.verdict, kc.failed, kc.from = Invalid, seg, states
			}
			return
		}
		next := seg.carry(ins, bits, rec.list())
		if len(next) == 0 {
			kc.verdict, kc.failed, kc.from = Invalid, seg, states
			return
		}
		sortStates(next)
		states = next
	}
}

// operations lays out one porcupine search of a segment of kc.searched: the
// state it starts from (as an operation before all others), its operations,
// and at its end a probe (kProbe) or, for a visualization, a cut (kCut); in
// the last segment, unless unknown outcomes are bounded, the end marker.
func (kc *keyCheck) operations(seg *segment, bits map[int32]int8, from lockState, withStart bool, end opKind) []porcupine.Operation {
	ins := kc.searched
	ops := make([]porcupine.Operation, 0, len(seg.ops)+2)
	if withStart {
		t0 := seg.from - 1
		if len(seg.ops) > 0 {
			t0 = min(t0, ins[seg.ops[0]].call-1)
		}
		start := &lockInput{kind: kStart, start: from, call: t0, ret: t0, gaveUp: t0, op: -1, bit: -1}
		ops = append(ops, porcupine.Operation{ClientId: 0, Input: start, Call: t0, Return: t0})
	}
	for _, i := range seg.ops {
		in := ins[i]
		if b, ok := bits[i]; ok {
			cp := *in
			cp.bit = b
			in = &cp
		}
		ops = append(ops, porcupine.Operation{ClientId: kc.rows[in.process], Input: in, Call: in.call, Return: in.ret})
	}
	switch {
	case seg.to < history.Never:
		probe := &lockInput{kind: end, call: seg.to, ret: seg.to, gaveUp: seg.to, op: -1, bit: -1}
		ops = append(ops, porcupine.Operation{ClientId: 0, Input: probe, Call: seg.to, Return: seg.to})
	case kc.mode != modeBounded:
		e := &lockInput{kind: kEnd, call: kc.end, ret: kc.end, gaveUp: kc.end, op: -1, bit: -1}
		ops = append(ops, porcupine.Operation{ClientId: 0, Input: e, Call: kc.end, Return: kc.end})
	}
	return ops
}

// maxWholeExact is the largest key the exact search takes in one piece:
// porcupine's memory grows with the square of it.
const maxWholeExact = 10000

// maxVisualized bounds how many starting states of a failed segment are
// rendered: each is a partition of its own in the HTML.
const maxVisualized = 3

// explain reruns porcupine verbosely on the failed segments, to name the
// operation no legal order could place and to draw the visualization.
func (l *linearizable) explain(c *collector, km *keyModel, failed []*keyCheck, deadline time.Time, faults []history.Window) {
	var parts [][]porcupine.Operation
	var owner []*keyCheck
	for _, kc := range failed {
		bits := kc.failed.bits()
		for i, st := range kc.from {
			if i == maxVisualized {
				break
			}
			parts = append(parts, kc.operations(kc.failed, bits, st, kc.failed.from > math.MinInt64, kCut))
			owner = append(owner, kc)
		}
	}
	model := newModel(km, nil) // each input carries its search's mode
	model.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return parts }
	var all []porcupine.Operation
	for _, p := range parts {
		all = append(all, p...)
	}
	// The failed segments were searched to the end once already; give the
	// verbose rerun the same budget again rather than what is left.
	res, info := porcupine.CheckOperationsVerbose(model, all, max(time.Until(deadline), l.o.Timeout))
	written := ""
	if l.o.VisualizationPath != "" && res != porcupine.Ok {
		info.AddAnnotations(faultAnnotations(faults))
		if err := porcupine.VisualizePath(model, info, l.o.VisualizationPath); err != nil {
			c.fail("write visualization: " + err.Error())
		} else {
			written = l.o.VisualizationPath
		}
	}
	partials := info.PartialLinearizationsOperations()
	done := map[*keyCheck]bool{}
	for p, kc := range owner {
		if done[kc] {
			continue
		}
		done[kc] = true
		var longest []porcupine.Operation
		if p < len(partials) {
			// The longest legal order, and among those the one that
			// assumes the fewest operations of unknown outcome happened:
			// it reads most like what the clients saw.
			best := -1
			for _, seq := range partials[p] {
				if n := guessed(seq); len(seq) > len(longest) || (len(seq) == len(longest) && n < best) {
					longest, best = seq, n
				}
			}
		}
		c.add(kc.anomaly(km, model, parts[p], longest, written))
	}
}

// anomaly names the first operation (by return) that the longest legal
// order of the failed segment could not place, and the state it met.
func (kc *keyCheck) anomaly(km *keyModel, model porcupine.Model, part, longest []porcupine.Operation, written string) Anomaly {
	placed := map[*lockInput]bool{}
	state := model.Init()
	for _, op := range longest {
		in := op.Input.(*lockInput)
		placed[in] = true
		_, state = model.Step(state, in, nil)
	}
	// The culprit is the first operation to return that no legal order
	// placed, preferring one whose outcome the client knew.
	var culprit *lockInput
	for _, op := range part {
		in := op.Input.(*lockInput)
		if in.op < 0 || placed[in] {
			continue
		}
		if earlierCulprit(in, culprit) {
			culprit = in
		}
	}
	a := Anomaly{Kind: KindNonlinearizable, Keys: []string{kc.key}}
	st := state.(lockState)
	if culprit == nil {
		a.Detail = fmt.Sprintf("no order of the lock operations on %s is legal for a lease mutex", kc.key)
		return a
	}
	a.StartNS, a.EndNS = culprit.call, culprit.gaveUp
	a.Clients = []int{culprit.client}
	a.Processes = []int{culprit.process}
	a.Leases = []string{km.leaseName(culprit.lease)}
	if st.holder != 0 && st.holder != culprit.lease {
		h := km.meta(st.holder)
		a.Clients = uniqueInts(culprit.client, h.client)
		a.Processes = uniqueInts(culprit.process, h.process)
		a.Leases = append(a.Leases, h.id)
	}
	a.Detail = fmt.Sprintf("no order of the lock operations on %s is legal for a lease mutex: %s cannot follow any legal order of the operations before it (in the longest one found, the lock was then %s)",
		kc.key, describeCulprit(km, culprit), km.describeState(st))
	if written != "" {
		a.Detail += " (see " + written + ")"
	}
	return a
}

// earlierCulprit reports whether a makes a better culprit than b: a known
// outcome over an unknown one, then the earlier return, then the earlier call.
func earlierCulprit(a, b *lockInput) bool {
	if b == nil {
		return true
	}
	if au, bu := a.status == history.Unknown, b.status == history.Unknown; au != bu {
		return !au
	}
	if a.ret != b.ret {
		return a.ret < b.ret
	}
	return a.call < b.call
}

// guessed counts the operations of unknown outcome in a partial order.
func guessed(seq []porcupine.Operation) int {
	n := 0
	for _, op := range seq {
		if in := op.Input.(*lockInput); in.op >= 0 && in.status == history.Unknown {
			n++
		}
	}
	return n
}

func describeCulprit(km *keyModel, in *lockInput) string {
	what := map[opKind]string{kAcquire: "acquire", kRelease: "release", kRefresh: "refresh"}[in.kind]
	out := string(in.status)
	if in.kind == kRelease && in.status == history.OK {
		if in.deleted {
			out = "ok, deleted the key"
		} else {
			out = "ok, deleted nothing"
		}
	}
	return fmt.Sprintf("client %d's %s of lease %s (%s, %s to %s)",
		in.client, what, km.leaseName(in.lease), out, fmtTime(in.call), fmtTime(in.gaveUp))
}

// sortStates orders states so that searches, and the explanation of a
// failure, do not depend on map iteration order.
func sortStates(s []lockState) {
	sort.Slice(s, func(i, j int) bool {
		a, b := s[i], s[j]
		switch {
		case a.holder != b.holder:
			return a.holder < b.holder
		case a.start != b.start:
			return a.start < b.start
		case a.now != b.now:
			return a.now < b.now
		case a.applied != b.applied:
			return a.applied < b.applied
		}
		return a.ghosts < b.ghosts
	})
}

// faultAnnotations draws every fault window in porcupine's visualization, on
// a "faults" line of its own, so the operations no order could place are
// seen against what the nemesis was doing.
func faultAnnotations(ws []history.Window) []porcupine.Annotation {
	out := make([]porcupine.Annotation, 0, len(ws))
	for _, w := range ws {
		out = append(out, porcupine.Annotation{Tag: "faults", Start: w.Start, End: w.End,
			Description: w.Fault, Details: fmt.Sprintf("%s on %s, %s to %s", w.Fault, w.Target, fmtTime(w.Start), fmtTime(w.End)),
			BackgroundColor: "#f6d6d6"})
	}
	return out
}
