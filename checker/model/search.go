package model

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/locktorture/locktorture/history"
)

// How one key is searched: which searches, on which inputs, in what time.

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
