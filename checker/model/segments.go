package model

import (
	"math"
	"sort"

	"github.com/locktorture/locktorture/history"
)

// Porcupine's search remembers, for every step it takes, which operations
// are already linearized, as a bitset over the whole partition: memory grows
// with the square of the partition's length, about 300 MB for the 50,000
// lock operations of a modest run on one key. So a key's history is checked
// in segments of a few hundred operations, cut at instants where few
// operations are in flight, and the search carries the set of states the
// lock could be in at each cut from one segment to the next:
//
//   - a segment holds the operations whose intervals reach into it; those
//     that span a cut belong to the segments on both sides, each with a bit
//     in the state saying whether it has already taken effect;
//   - a probe placed at the cut records every state (and set of spanning
//     operations already applied) that a legal order of the segment can reach
//     there; it never linearizes itself, so porcupine explores them all;
//   - the next segment is searched once from each recorded state.
//
// This is exact, not an approximation: the history is linearizable if and
// only if some chain of recorded states reaches the end. What it costs is
// the size of those state sets, which stay small because states that can do
// everything another can (an earlier lease start, an earlier "now", an
// unknown operation still pending rather than applied) replace it.

// maxBoundary bounds the operations that may span one cut, so that the
// spanning operations of a segment's two cuts fit the 64 bits of
// lockState.applied.
const maxBoundary = 32

// segment is one piece of a key's history.
type segment struct {
	ops      []int32 // indices into the key's inputs, in call order
	from, to int64   // the cuts it lies between
	prev     []int32 // operations spanning from, in canonical order
	next     []int32 // operations spanning to, in canonical order
}

// chooseCuts picks instants to cut a key's history at: one after every
// target operations or so, at the instant with the fewest operations in
// flight among the next target/4 candidates. Cuts fall strictly between
// event times, so no operation starts or ends at one.
func chooseCuts(ins []*lockInput, target int) []int64 {
	if target <= 0 || len(ins) <= target {
		return nil
	}
	type ev struct {
		t int64
		d int
	}
	evs := make([]ev, 0, 2*len(ins))
	for _, in := range ins {
		evs = append(evs, ev{in.call, 1})
		if in.ret < history.Never {
			evs = append(evs, ev{in.ret, -1})
		}
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	var cuts []int64
	open, calls, lastCut, seen := 0, 0, 0, 0
	type cand struct {
		c     int64
		open  int
		calls int
	}
	best, have := cand{}, false
	for i := 0; i < len(evs); {
		t := evs[i].t
		for ; i < len(evs) && evs[i].t == t; i++ {
			open += evs[i].d
			if evs[i].d > 0 {
				calls++
			}
		}
		if i == len(evs) || evs[i].t-t < 2 || calls-lastCut < target {
			continue
		}
		if open <= maxBoundary && (!have || open < best.open) {
			best, have = cand{t + 1, open, calls}, true
		}
		seen++
		if have && (seen > target/4 || best.open <= 1) {
			cuts = append(cuts, best.c)
			lastCut, have, seen = best.calls, false, 0
		}
	}
	return cuts
}

// buildSegments splits the inputs at the cuts.
func buildSegments(ins []*lockInput, cuts []int64) []segment {
	m := len(cuts)
	segs := make([]segment, m+1)
	for k := range segs {
		segs[k].from, segs[k].to = math.MinInt64, history.Never
		if k > 0 {
			segs[k].from = cuts[k-1]
		}
		if k < m {
			segs[k].to = cuts[k]
		}
	}
	for i, in := range ins {
		a := sort.Search(m, func(j int) bool { return cuts[j] > in.call })
		b := m
		if in.ret < history.Never {
			b = sort.Search(m, func(j int) bool { return cuts[j] > in.ret })
		}
		for k := a; k <= b; k++ {
			segs[k].ops = append(segs[k].ops, int32(i))
		}
		for k := a; k < b; k++ {
			segs[k].next = append(segs[k].next, int32(i))
			segs[k+1].prev = append(segs[k+1].prev, int32(i))
		}
	}
	return segs
}

// bits numbers a segment's spanning operations: those spanning its start
// first, in the order the previous segment's states use, then the rest.
func (s *segment) bits() map[int32]int8 {
	b := make(map[int32]int8, len(s.prev)+len(s.next))
	for j, i := range s.prev {
		b[i] = int8(j)
	}
	for _, i := range s.next {
		if _, ok := b[i]; !ok {
			b[i] = int8(len(b))
		}
	}
	return b
}

// carry turns the states a segment's probe recorded into the states the
// next segment starts from: applied re-indexed to the next segment's
// numbering, unknown releases and refreshes of a lease that no longer holds
// the lock marked done (they can only be no-ops from here on), and states
// that another state dominates dropped.
func (s *segment) carry(ins []*lockInput, bits map[int32]int8, states []lockState) []lockState {
	var unknown uint64
	for j, i := range s.next {
		if ins[i].status == history.Unknown {
			unknown |= 1 << uint(j)
		}
	}
	out := make([]lockState, 0, len(states))
	seen := map[lockState]bool{}
	for _, st := range states {
		var m uint64
		for j, i := range s.next {
			if st.applied&(1<<uint(bits[i])) != 0 {
				m |= 1 << uint(j)
			}
		}
		for j, i := range s.next {
			in := ins[i]
			if m&(1<<uint(j)) != 0 || in.status != history.Unknown || in.kind == kAcquire || st.holder == in.lease {
				continue
			}
			if !s.pendingAcquire(ins, m, in.lease) {
				m |= 1 << uint(j)
			}
		}
		st.applied = m
		if !seen[st] {
			seen[st] = true
			out = append(out, st)
		}
	}
	// Drop dominated states. There are few (usually one to three), so
	// comparing all pairs costs nothing.
	keep := out[:0]
	for i, b := range out {
		dominated := false
		for j, a := range out {
			if i != j && dominates(a, b, unknown) && (!dominates(b, a, unknown) || j < i) {
				dominated = true
				break
			}
		}
		if !dominated {
			keep = append(keep, b)
		}
	}
	return keep
}

// pendingAcquire reports whether an acquire of lease is among the spanning
// operations not yet applied: then the lease may still take the lock.
func (s *segment) pendingAcquire(ins []*lockInput, applied uint64, lease int32) bool {
	for j, i := range s.next {
		if ins[i].kind == kAcquire && ins[i].lease == lease && applied&(1<<uint(j)) == 0 {
			return true
		}
	}
	return false
}

// dominates reports whether every continuation legal from b is legal from
// a: same holder and ttl, same finished operations applied, no later lease
// start or "now" (earlier ones only let leases expire sooner), no more
// orphaned keys used up (see lockInput.ghostCalls), and a subset
// of the unknown operations applied (one still pending may yet be placed
// last, where it changes nothing).
func dominates(a, b lockState, unknown uint64) bool {
	return a.holder == b.holder && a.ttl == b.ttl && a.sink == b.sink &&
		a.applied&^unknown == b.applied&^unknown &&
		a.applied&unknown&^b.applied == 0 &&
		a.start <= b.start && a.now <= b.now && a.ghosts <= b.ghosts
}
