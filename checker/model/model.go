package model

import (
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/locktorture/locktorture/history"
)

// The lease-mutex specification porcupine checks a key against: its inputs
// and state, the step function, the hash porcupine's cache uses and the
// porcupine model itself. How its operations and states read is in
// describe.go.

// ExpirySlack is how much earlier than its ttl Redis may expire a key: it
// stamps the expiry from a millisecond clock, so a key written 0.9 ms into
// a millisecond lives up to that much less than its ttl. The model and the
// lease validity allow for it, so that rounding is never taken for a broken
// lock.
const ExpirySlack = int64(time.Millisecond)

// opKind is what a model input does.
type opKind uint8

const (
	kAcquire opKind = iota
	kRelease
	kRefresh
	// kStart sets the state a segment starts from (see segments.go).
	kStart
	// kProbe records the state at a segment's cut and never linearizes.
	kProbe
	// kCut ends a segment in a visualization: everything after it is legal.
	kCut
	// kEnd follows every operation with a known outcome; operations with an
	// unknown one placed after it never happened.
	kEnd
)

// lockInput is one operation as the lease-mutex model sees it.
type lockInput struct {
	kind    opKind
	status  history.Type
	deleted bool
	lease   int32 // dense per key, 1-based
	// bit is the operation's slot in lockState.applied while it spans a
	// segment boundary, -1 otherwise.
	bit  int8
	call int64
	// ret bounds the linearization point: the completion time, or Never
	// for an operation whose outcome is unknown.
	ret int64
	// gaveUp is the completion time as recorded, for descriptions.
	gaveUp int64
	ttl    int64
	// client and process issued the operation.
	client, process int
	// op is the operation's index into index.ops, -1 for synthetic inputs.
	op    int
	start lockState
	// mode is the search this input is part of (see searchMode).
	mode searchMode
	// orphan: the lease was acquired with an unknown outcome (the relaxed
	// search leaves that acquire out).
	orphan bool
	// orphanFrom is the earliest call of an acquire of unknown outcome on
	// the key, history.Never if none: from then on a key nobody holds may
	// exist (the relaxed search lets a release delete it).
	orphanFrom int64
	// ghostCalls, when the relaxed search is exact (keyCheck.ghostly),
	// are the sorted calls of the key's acquires of unknown outcome: the
	// keys they may have left behind, each of which one release that
	// deleted a key nobody held can have found. Nil otherwise.
	ghostCalls []int64
	// expires bounds, for a release or refresh of unknown outcome, when its
	// lease can still hold the lock (see keyCheck.prepare); history.Never
	// if nothing bounds it.
	expires int64
	// noop: the operation may be placed as a no-op anywhere in its window
	// (searchMode says when).
	noop bool
	// healed is, for an operation of unknown outcome, the latest heal of a
	// fault active while it was in flight (0 if none): a command stuck
	// behind a paused server or a cut link runs when that ends, if at all.
	healed int64
}

// searchMode says how operations of unknown outcome are treated.
type searchMode uint8

const (
	// modeBounded: each takes effect no later than a horizon after its
	// client gave up, or never (a no-op wherever it is placed). A
	// restriction of the truth: a legal order found here is one.
	modeBounded searchMode = iota
	// modeRelaxed: acquires of unknown outcome are left out, and what only
	// they could explain (a release deleting a key nobody holds, the
	// owner of such a lease refreshing or deleting it) is allowed. A
	// relaxation of the truth: if no order is legal here, none is.
	modeRelaxed
	// modeExact: each may take effect at any time after its call, or never
	// (placed after the end marker). The truth, and the slowest search.
	modeExact
)

// lockState is the model's state. It is a small comparable value so that
// porcupine's cache compares and hashes it cheaply.
type lockState struct {
	// holder is the lease holding the lock, 0 when free.
	holder int32
	// sink: past a visualization cut or the end marker, where nothing is
	// checked any more.
	sink bool
	// start is a lower bound of when the holder's lease was last written
	// (acquire or refresh); it expires no earlier than start + ttl.
	start int64
	ttl   int64
	// now is a lower bound of the current linearization point: points never
	// go back, so an operation takes effect no earlier than now, and an
	// operation that relied on a lease having expired moved now past that
	// expiry.
	now int64
	// applied marks the boundary operations (see lockInput.bit) that have
	// already taken effect.
	applied uint64
	// ghosts counts the keys left by acquires of unknown outcome that
	// releases have deleted so far (see lockInput.ghostCalls).
	ghosts int32
}

func freeState(s lockState) lockState {
	s.holder, s.start, s.ttl = 0, 0, 0
	return s
}

// stepLock is the sequential specification of an owner-aware lease mutex.
//
// Each operation takes effect at a point p in [call, ret], points never
// decreasing along the order. A lease written at p may expire from
// p + ttl on, so another lease may take the lock then; until then only its
// holder may release or refresh it. A failed acquire or release changes
// nothing (such operations are left out of the search altogether).
//
// An operation whose outcome is unknown takes effect where it can. Where it
// cannot, it is a no-op if it has a finite window to happen in or not (the
// bounded search; releases and refreshes whose lease surely expired, see
// keyCheck.prepare); otherwise it cannot be placed there at all, and "it
// never happened" is expressed by placing it after the end marker (kEnd),
// which saves porcupine from trying it as a no-op at every position.
// searchMode describes the relaxed search's exceptions.
//
// Judging expiry by each operation's return alone would be simpler, but
// too lenient: an acquire that waited long would count its lease from its
// call, long before it could have been written, and an order could place an
// operation after one that took effect only once it had returned. Tracking
// now refuses both, and is still sound.
func stepLock(s lockState, in *lockInput) (bool, lockState) {
	p := max(s.now, in.call)
	if p > in.ret {
		// An operation placed before it took effect after it returned
		// (having waited for a lease to expire): it cannot follow that.
		if in.status == history.Fail && in.kind != kRefresh {
			return true, s // it did nothing, at no particular point
		}
		return in.status == history.Unknown && (in.mode == modeBounded || in.noop), s
	}
	st := lockStep{s: s, in: in, p: p, lenient: in.mode == modeBounded || in.noop, relaxed: in.mode == modeRelaxed,
		mine: s.holder != 0 && s.holder == in.lease}
	switch in.kind {
	case kAcquire:
		return st.acquire()
	case kRelease:
		return st.release()
	case kRefresh:
		return st.refresh()
	}
	return false, s
}

// lockStep is one operation applied to one state: in placed at p.
type lockStep struct {
	s  lockState
	in *lockInput
	p  int64
	// lenient: an unknown operation that cannot go here did not happen
	// (the bounded search, or an operation that changes nothing);
	// relaxed: the relaxed search; mine: in acts for the holder's lease.
	lenient, relaxed, mine bool
}

// expiry reports whether the holder's lease can have run out at a point
// this operation may still take, and the earliest such point.
func (st *lockStep) expiry() (bool, int64) {
	if st.s.ttl <= 0 {
		return false, 0
	}
	t := max(st.p, st.s.start+st.s.ttl-ExpirySlack)
	return t <= st.in.ret, t
}

// expire frees the key once the holder's lease can have run out, if it
// can while this operation may take effect.
func (st *lockStep) expire() (bool, lockState) {
	ok, t := st.expiry()
	if !ok {
		return false, st.s
	}
	n := freeState(st.s)
	n.now = t
	return true, n
}

// freed frees the key at the operation's point.
func (st *lockStep) freed() (bool, lockState) {
	n := freeState(st.s)
	n.now = st.p
	return true, n
}

func (st *lockStep) acquire() (bool, lockState) {
	s, in, n := st.s, st.in, st.s
	if in.status == history.Fail {
		return true, s
	}
	at := st.p
	if s.holder != 0 && !st.mine {
		ok, t := st.expiry()
		if !ok {
			// Held by a live lease: an ok acquire is illegal; an
			// unknown one did not happen here.
			return in.status == history.Unknown && st.lenient, s
		}
		at = t
	}
	n.holder, n.start, n.ttl, n.now = in.lease, at, in.ttl, at
	return true, n
}

func (st *lockStep) release() (bool, lockState) {
	s, in, n := st.s, st.in, st.s
	switch in.status {
	case history.Fail:
		return true, s
	case history.Unknown:
		if st.mine {
			return st.freed()
		}
		return st.lenient, s
	}
	if st.mine {
		if in.deleted {
			return st.freed()
		}
		// Our own key was not there: legal only if it had expired.
		return st.expire()
	}
	if !in.deleted {
		n.now = st.p
		return true, n
	}
	// It deleted a key that was not its own. That is only legal if the
	// holder's lease could have run out: deleting a live lease is the
	// very thing an owner-aware lock must not do.
	if s.holder == 0 {
		return st.deleteGhost()
	}
	return st.expire()
}

// deleteGhost is an ok release that deleted a key nobody held: legal only
// if an acquire of unknown outcome left one behind.
func (st *lockStep) deleteGhost() (bool, lockState) {
	s, in, n := st.s, st.in, st.s
	switch {
	case !st.relaxed:
	case in.ghostCalls != nil && !in.orphan:
		// Exactly: the next unused acquire of unknown outcome wrote the
		// key just before this release deleted it.
		if int(s.ghosts) < len(in.ghostCalls) && in.ghostCalls[s.ghosts] <= in.ret {
			n.now = max(st.p, in.ghostCalls[s.ghosts])
			n.ghosts++
			return true, n
		}
	case in.orphan || in.orphanFrom <= in.ret:
		n.now = st.p
		return true, n
	}
	return false, s
}

func (st *lockStep) refresh() (bool, lockState) {
	s, in, n := st.s, st.in, st.s
	switch in.status {
	case history.OK:
		if !st.mine && st.relaxed && in.orphan {
			// The lease's acquire was left out; it may have taken the
			// lock wherever it was free or its holder expired.
			if s.holder == 0 {
				n.now = st.p
				return true, n
			}
			ok, t := st.expiry()
			n.now = t
			return ok, n
		}
		if !st.mine {
			return false, s
		}
		return true, st.renewed()
	case history.Unknown:
		if !st.mine {
			return st.lenient, s
		}
		return true, st.renewed()
	}
	// Refresh failed: the lease is not ours any more.
	if !st.mine {
		n.now = st.p
		return true, n
	}
	return st.expire()
}

// renewed is the state with the holder's lease renewed at the point.
func (st *lockStep) renewed() lockState {
	n := st.s
	n.start, n.now = st.p, st.p
	if st.in.ttl > 0 {
		n.ttl = st.in.ttl
	}
	return n
}

// hashState mixes the state's fields (splitmix64 finalizer); porcupine uses
// it to bucket its cache, so it must only be fast and spread well.
func hashState(v any) uint64 {
	s := v.(lockState)
	h := uint64(s.holder)*0x9e3779b97f4a7c15 ^ uint64(s.start)
	h = mix(h) ^ uint64(s.ttl)
	h = mix(h) ^ uint64(s.now)
	h = mix(h) ^ s.applied
	h = mix(h) ^ uint64(s.ghosts)
	if s.sink {
		h ^= 1
	}
	return mix(h)
}

func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// recorder collects the states a probe saw. Porcupine may still be
// stepping in a goroutine after a timeout, hence the lock.
type recorder struct {
	mu     sync.Mutex
	states map[lockState]struct{}
}

func newRecorder() *recorder { return &recorder{states: map[lockState]struct{}{}} }

func (r *recorder) add(s lockState) {
	r.mu.Lock()
	r.states[s] = struct{}{}
	r.mu.Unlock()
}

func (r *recorder) list() []lockState {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]lockState, 0, len(r.states))
	for s := range r.states {
		out = append(out, s)
	}
	return out
}

// newModel builds the porcupine model. With rec set, probes record the state
// they see; otherwise they are legal no-ops.
func newModel(km *keyModel, rec *recorder) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return lockState{} },
		Step: func(state, input, _ any) (bool, any) {
			s := state.(lockState)
			in := input.(*lockInput)
			switch in.kind {
			case kStart:
				return true, in.start
			case kProbe:
				if rec != nil {
					rec.add(s)
					return false, s
				}
				return true, s
			case kCut, kEnd:
				return true, lockState{sink: true}
			}
			if s.sink {
				return true, s
			}
			if in.bit >= 0 {
				mask := uint64(1) << uint(in.bit)
				if s.applied&mask != 0 {
					return true, s // took effect before the segment began
				}
				ok, n := stepLock(s, in)
				if ok {
					n.applied |= mask
				}
				return ok, n
			}
			return stepLock(s, in)
		},
		Equal:             func(a, b any) bool { return a.(lockState) == b.(lockState) },
		Hash:              hashState,
		DescribeOperation: func(input, _ any) string { return km.describeOp(input.(*lockInput)) },
		DescribeState:     func(state any) string { return km.describeState(state.(lockState)) },
	}
}
