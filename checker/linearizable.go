package checker

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sort"
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
}

// DefaultLinearizableTimeout is the search's time budget when the options
// give none.
const DefaultLinearizableTimeout = 30 * time.Second

// Linearizable returns the checker that asks porcupine whether the lock
// operations on each key can be ordered, each at an instant within its own
// call and return, so that an owner-aware lease mutex allows the order (see
// stepLock). It catches what the interval checks cannot: a release that
// deleted a live lease of someone else, a refresh or release that found its
// own live key gone, an acquire granted while another lease was surely in
// force even though the victim never noticed.
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

	segments  int
	maxStates int
	verdict   Verdict
	// On Invalid: the segment no order got through, and the states it was
	// searched from.
	failed *segment
	from   []lockState
}

func (l *linearizable) checkIndex(ctx context.Context, ix *index) Result {
	c := newCollector(l.Name(), l.s)
	ctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
	defer cancel()
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()

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
				l.search(kc, km, &stop)
			}
		}()
	}
	for _, kc := range checks {
		work <- kc
	}
	close(work)
	wg.Wait()

	var ops, dropped, unknown, segments, maxStates int64
	var failed []*keyCheck
	var undecided []string
	for _, kc := range checks {
		ops += int64(len(kc.ins))
		dropped += int64(kc.dropped)
		unknown += int64(kc.unknown)
		segments += int64(kc.segments)
		maxStates = max(maxStates, int64(kc.maxStates))
		switch kc.verdict {
		case Invalid:
			failed = append(failed, kc)
		case Unknown:
			undecided = append(undecided, kc.key)
		}
	}
	c.stat("partitions", int64(len(checks)))
	c.stat("operations", ops)
	c.stat("skipped_failed", dropped)
	c.stat("unknown_outcome", unknown)
	c.stat("segments", segments)
	c.stat("max_states_at_cut", maxStates)
	if len(undecided) > 0 {
		if ctx.Err() == context.DeadlineExceeded {
			c.fail(fmt.Sprintf("linearizability search ran out of its %v budget before deciding %d key(s): %v", l.o.Timeout, len(undecided), undecided))
		} else {
			c.fail(fmt.Sprintf("linearizability search stopped before deciding %d key(s): %v", len(undecided), undecided))
		}
	}
	if len(failed) > 0 {
		l.explain(c, km, failed)
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
			status: o.Status, call: o.Call, ret: o.Return, gaveUp: o.Return, ttl: int64(o.TTL),
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
			in.ret = history.Never
			kc.unknown++
		}
		in.lease = leaseID(o)
		if _, ok := kc.rows[o.Process]; !ok {
			kc.rows[o.Process] = len(kc.rows) + 1 // row 0 holds the cuts
		}
		kc.ins = append(kc.ins, in)
	}
	return kc
}

// search runs porcupine over the key's segments, carrying the set of states
// reachable at each cut into the next.
func (l *linearizable) search(kc *keyCheck, km *keyModel, stop *atomic.Bool) {
	segs := buildSegments(kc.ins, chooseCuts(kc.ins, l.o.SegmentOps))
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
				return false, s // unwind the search quickly
			}
			return step(s, in, out)
		}
		ok := false
		for _, st := range states {
			ops := kc.operations(seg, bits, st, k > 0, kProbe)
			if porcupine.CheckOperations(model, ops) {
				ok = true
				if last {
					break
				}
			}
			if stop.Load() {
				kc.verdict = Unknown
				return
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
		next := seg.carry(kc.ins, bits, rec.list())
		sortStates(next)
		if len(next) == 0 {
			kc.verdict, kc.failed, kc.from = Invalid, seg, states
			return
		}
		states = next
	}
	kc.verdict = Valid // no lock operations at all
}

// operations lays out one porcupine search of a segment: the state it
// starts from (as an operation before all others), its operations, and at
// its end a probe (kProbe) or, for a visualization, a cut (kCut).
func (kc *keyCheck) operations(seg *segment, bits map[int32]int8, from lockState, withStart bool, end opKind) []porcupine.Operation {
	ops := make([]porcupine.Operation, 0, len(seg.ops)+2)
	if withStart {
		t0 := seg.from - 1
		if len(seg.ops) > 0 {
			t0 = min(t0, kc.ins[seg.ops[0]].call-1)
		}
		start := &lockInput{kind: kStart, start: from, call: t0, ret: t0, gaveUp: t0, op: -1, bit: -1}
		ops = append(ops, porcupine.Operation{ClientId: 0, Input: start, Call: t0, Return: t0})
	}
	for _, i := range seg.ops {
		in := kc.ins[i]
		if b, ok := bits[i]; ok {
			cp := *in
			cp.bit = b
			in = &cp
		}
		ops = append(ops, porcupine.Operation{ClientId: kc.rows[in.process], Input: in, Call: in.call, Return: in.ret})
	}
	if seg.to < history.Never {
		probe := &lockInput{kind: end, call: seg.to, ret: seg.to, gaveUp: seg.to, op: -1, bit: -1}
		ops = append(ops, porcupine.Operation{ClientId: 0, Input: probe, Call: seg.to, Return: seg.to})
	}
	return ops
}

// maxVisualized bounds how many starting states of a failed segment are
// rendered: each is a partition of its own in the HTML.
const maxVisualized = 3

// explain reruns porcupine verbosely on the failed segments, to name the
// operation no legal order could place and to draw the visualization.
func (l *linearizable) explain(c *collector, km *keyModel, failed []*keyCheck) {
	var parts [][]porcupine.Operation
	owner := []*keyCheck{}
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
	model := newModel(km, nil)
	model.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return parts }
	var all []porcupine.Operation
	for _, p := range parts {
		all = append(all, p...)
	}
	res, info := porcupine.CheckOperationsVerbose(model, all, l.o.Timeout)
	written := ""
	if l.o.VisualizationPath != "" && res != porcupine.Ok {
		if err := porcupine.VisualizePath(model, info, l.o.VisualizationPath); err != nil {
			c.res.Stats["visualization_failed"] = 1
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
			for _, seq := range partials[p] {
				if len(seq) > len(longest) {
					longest = seq
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
	var culprit *lockInput
	for _, op := range part {
		in := op.Input.(*lockInput)
		if in.op < 0 || placed[in] {
			continue
		}
		if culprit == nil || in.ret < culprit.ret || (in.ret == culprit.ret && in.call < culprit.call) {
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
	a.Detail = fmt.Sprintf("no order of the lock operations on %s is legal for a lease mutex: %s fits after none of the legal orders of the %d operations before it, the lock being %s there",
		kc.key, describeCulprit(km, culprit), len(longest), km.describeState(st))
	if written != "" {
		a.Detail += " (see " + written + ")"
	}
	return a
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
		}
		return a.applied < b.applied
	})
}
