package checker

import (
	"math"
	"sort"

	"github.com/locktorture/locktorture/history"
)

// What the lease-claims rules read of one key: when each lease's key may
// have been the lease's (its life), and where the key may have held
// anything at all.

// keyClaims is what the rules read of one key, gathered once.
type keyClaims struct {
	ix *index
	k  *keyIndex
	// nested are the key's nested acquires and releases, by process, in
	// call order: a reentrant lock files them under no lease (see
	// indexer.nested), though its owner's nested operations renew the key.
	nested map[int][]int
	// all are the key's releases and nested releases, in call order, and
	// allRet the latest return among all[:i+1], to stop a walk back.
	all    []int
	allRet []int64
	// grants are the returns of the key's ok acquires (nested leases'
	// too), in order.
	grants []int64
	// holds are the key's holds, nested ones too, in start order, and
	// heldTo, worked out when a refresh first asks, the latest moment any
	// of holds[:i+1] can have mattered to one: while it was not released
	// and its lease may have been alive.
	holds  []*hold
	heldTo []int64
	// hidden are the operations on the key a window hid (index.hidden).
	hidden []*history.Operation
	// lives are where the key may have held something (see mayHold),
	// worked out when a release first asks.
	lives     []span
	livesDone bool
}

func newKeyClaims(ix *index, k *keyIndex, nested map[int][]int, hidden []*history.Operation) *keyClaims {
	kc := &keyClaims{ix: ix, k: k, nested: nested, hidden: hidden, all: append([]int(nil), k.releases...)}
	for _, ops := range nested {
		for _, i := range ops {
			if ix.ops[i].Op == history.NestedRelease {
				kc.all = append(kc.all, i)
			}
		}
	}
	sort.Ints(kc.all) // the operations are in call order, so are their indices
	for _, i := range kc.all {
		kc.allRet = append(kc.allRet, max(ix.ops[i].Return, last(kc.allRet)))
	}
	kc.holds = append([]*hold(nil), k.holds...)
	for _, l := range k.nested {
		if l.hold != nil {
			kc.holds = append(kc.holds, l.hold)
		}
	}
	sort.SliceStable(kc.holds, func(i, j int) bool { return kc.holds[i].start < kc.holds[j].start })
	for _, h := range kc.holds {
		kc.grants = append(kc.grants, h.start)
	}
	sort.Slice(kc.grants, func(i, j int) bool { return kc.grants[i] < kc.grants[j] })
	return kc
}

// last is the last of xs, or math.MinInt64.
func last(xs []int64) int64 {
	if len(xs) == 0 {
		return math.MinInt64
	}
	return xs[len(xs)-1]
}

// leases are every lease of the key, in a fixed order: those acquired, the
// nested ones, then those only a refresh or a release names.
func (kc *keyClaims) leases() []*lease {
	out := append(append([]*lease(nil), kc.k.leases...), kc.k.nested...)
	var rest []*lease
	for _, l := range kc.k.byLease {
		if l.acquire < 0 {
			rest = append(rest, l)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].id < rest[j].id })
	return append(out, rest...)
}

// acquired returns the acquire of l, and whether it was ok: only a lease
// surely written by its acquire has a lifetime the rules can count from
// (one of unknown outcome may have been written at any time).
func (kc *keyClaims) acquired(l *lease) (*history.Operation, bool) {
	if l == nil || l.acquire < 0 {
		return nil, false
	}
	a := &kc.ix.ops[l.acquire]
	return a, a.Status == history.OK
}

// writeEnd is the latest a write of the given outcome, sent no earlier than
// call and answered (or given up on) at ret with ttl, may have kept the key:
// ret plus ttl for a reply (a write reported failed too: a Redlock's
// renewal that missed its majority may have extended a minority of
// masters); for an unknown outcome, UnknownWriteEnd (a ttl past the later
// of ret and the heal of every fault active while it ran, the horizon the
// linearizability search gives it too, plus the ttl it lives). A key
// written without ttl lives for ever.
func (kc *keyClaims) writeEnd(st history.Type, call, ret, ttl int64) int64 {
	switch {
	case st == history.Unknown:
		return UnknownWriteEnd(kc.ix.faults, call, ret, ttl)
	case ttl <= 0:
		return forever
	}
	return sat64(ret, ttl)
}

// lifeSpans are the stretches in which lease l's key may have been l's:
// each of its writes, from when it may have taken effect to writeEnd. They
// are its acquire and refreshes of every outcome (renewals), its owner's
// nested acquires and releases (a reentrant lock renews the key on each),
// its writes a window hid, and, for a lock that renews unseen, its hold and
// a ttl after. A lease its own release deleted (a release other than op
// skip) is over when that release returned: a stream keeps its
// operations for their own sake after that, not for its ttl, and liveness
// reads it so too.
func (kc *keyClaims) lifeSpans(l *lease, skip int) []span {
	ix := kc.ix
	var out []span
	for _, st := range []history.Type{history.OK, history.Unknown, history.Fail} {
		for _, rn := range ix.renewals(l, st) {
			out = append(out, span{rn.call, kc.writeEnd(st, rn.call, rn.ret, rn.ttl)})
		}
	}
	for _, o := range kc.ownerNested(l) {
		if o.Status == history.Fail || o.Op == history.NestedRelease && deleted(o) {
			continue
		}
		ttl := int64(o.TTL)
		if ttl == 0 {
			ttl = l.ttl
		}
		out = append(out, span{o.Call, kc.writeEnd(o.Status, o.Call, o.Return, ttl)})
	}
	for _, h := range kc.hidden {
		if kc.writes(l, h) {
			out = append(out, span{h.Call, forever})
		}
	}
	if h := l.hold; h != nil && ix.run != nil && ix.run.RenewsUnseen {
		out = append(out, span{h.start, sat64(h.believed().to, l.ttl)})
	}
	gone := kc.deletedAt(l, skip)
	for i := range out {
		out[i].to = min(out[i].to, gone)
	}
	return out
}

// lifeEnd is the latest lease l's key may have been l's, judging from the
// writes sent by t (math.MinInt64 if none was).
func (kc *keyClaims) lifeEnd(l *lease, t int64, skip int) int64 {
	end := int64(math.MinInt64)
	for _, s := range kc.lifeSpans(l, skip) {
		if s.from <= t {
			end = max(end, s.to)
		}
	}
	return end
}

// surelyGone reports whether the key can no longer have been l's at t,
// judging from end, its lifeEnd: Redis stamps expiries on a millisecond
// clock, so a key may be seen up to expirySlack past its ttl.
func surelyGone(end, t int64) bool { return end < forever && sat64(end, expirySlack) < t }

// writes reports whether h, an operation a window hid, writes lease l's
// key: a refresh of l, or a nested acquire of its owner's process.
func (kc *keyClaims) writes(l *lease, h *history.Operation) bool {
	switch h.Op {
	case history.Refresh:
		return h.Lease == l.id
	case history.NestedAcquire:
		a, _ := kc.acquired(l)
		return a != nil && !l.nested && h.Process == a.Process && history.SameOwner(h.Lease, l.id)
	}
	return false
}

// ownerNested are the nested acquires and releases of l's owner while it
// held l: its process entering or leaving the key again before its hold
// ended. (Nested acquires that took leases of their own are those
// leases', see keyIndex.nested.)
func (kc *keyClaims) ownerNested(l *lease) []*history.Operation {
	a, ok := kc.acquired(l)
	if !ok || l.nested {
		return nil
	}
	until := forever
	if h := l.hold; h != nil && h.endedBy != "end" {
		until = h.end // as a stream files them: with the lease while it is held
	}
	var out []*history.Operation
	for _, i := range kc.nested[a.Process] {
		o := &kc.ix.ops[i]
		if o.Call >= a.Call && o.Call < until && history.SameOwner(o.Lease, l.id) {
			out = append(out, o)
		}
	}
	return out
}

// deletedAt is when the first release of l (other than op skip) that
// deleted the key returned, or forever: its own releases, and its owner's
// nested ones (a count that came out one off ends the hold early).
func (kc *keyClaims) deletedAt(l *lease, skip int) int64 {
	ix := kc.ix
	from := int64(math.MinInt64)
	if l.acquire >= 0 {
		from = ix.ops[l.acquire].Call
	}
	at := forever
	for _, i := range l.releases {
		if r := &ix.ops[i]; i != skip && deleted(r) && r.Return >= from {
			at = min(at, r.Return)
		}
	}
	for _, o := range kc.ownerNested(l) {
		if o.Op == history.NestedRelease && deleted(o) && o.Return >= from {
			at = min(at, o.Return)
		}
	}
	return at
}

// deleted reports whether r is a release that reported deleting its key.
func deleted(r *history.Operation) bool {
	return r.Status == history.OK && r.Deleted != nil && *r.Deleted
}

// mayHold is where the key may have held something: every lease's
// lifeSpans, every acquire while it ran whatever it reported (a Redlock
// acquire that failed wrote a minority of masters before undoing them),
// the keys failed acquires held anyway (refused), and from its call on
// every write a window hid. A release that deleted the key outside them
// found nothing there.
func (kc *keyClaims) mayHold() []span {
	var out []span
	add := func(from, to int64) { out = append(out, span{from, sat64(to, 1)}) } // to is inclusive
	for _, l := range kc.leases() {
		for _, s := range kc.lifeSpans(l, -1) {
			add(s.from, s.to)
		}
	}
	acquires := kc.k.acquires
	for _, ops := range kc.nested {
		for _, i := range ops {
			if kc.ix.ops[i].Op == history.NestedAcquire {
				acquires = append(acquires[:len(acquires):len(acquires)], i)
			}
		}
	}
	for _, i := range acquires {
		o := &kc.ix.ops[i]
		add(o.Call, o.Return)
	}
	for _, s := range refused(kc.ix, kc.k) {
		add(s.from, s.to)
	}
	for _, h := range kc.hidden {
		if h.Op == history.Acquire || h.Op == history.NestedAcquire || h.Op == history.Refresh {
			add(h.Call, forever)
		}
	}
	return union(out)
}

// held reports whether the key may have held something at some moment of
// [from, to].
func (kc *keyClaims) held(from, to int64) bool {
	if !kc.livesDone {
		kc.lives, kc.livesDone = kc.mayHold(), true
	}
	s := kc.lives
	i := sort.Search(len(s), func(i int) bool { return s[i].to > from })
	return i < len(s) && s[i].from <= to
}
