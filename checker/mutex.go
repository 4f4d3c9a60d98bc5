package checker

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/locktorture/locktorture/history"
)

// MutualExclusion returns the checker of the lock's first promise: no two
// clients hold a key at once. Every pair of holds on one key whose intervals
// share a positive stretch of time is a double holder, classed by whether
// both leases were in force at some instant of the overlap (the lock failed)
// or not (a holder outlived its lease).
func MutualExclusion(opts ...Option) Checker {
	return newLockChecker("mutual-exclusion", opts, doubleHolders)
}

// doubleHolders sweeps each key's holds in start order, keeping the holds
// still open at the sweep line, so it costs O(holds + overlapping pairs)
// rather than comparing every pair.
func doubleHolders(_ context.Context, c *collector, ix *index) {
	var holds, pairs int64
	share := ShareOf(ix.run)
	for _, key := range ix.keys {
		var active []*hold
		for _, b := range ix.perKey[key].holds {
			holds++
			if b.end <= b.start {
				continue // a hold of no length overlaps nothing
			}
			n := 0
			for _, a := range active {
				if a.end > b.start {
					active[n] = a
					n++
				}
			}
			active = active[:n]
			for _, a := range active {
				pairs++
				c.add(sharedObject(doubleHolder(key, a, b), a.client(), b.client(), share))
			}
			active = append(active, b)
		}
	}
	c.stat("keys", int64(len(ix.keys)))
	c.stat("holds", holds)
	c.stat("overlaps", pairs)
	if gap, ok := closestGrant(ix); ok {
		c.stat(StatClosestGrant, gap)
	}
}

// StatClosestGrant is the mutual-exclusion stat of how close a run came to
// a double holder within the lease: the smallest gap, in nanoseconds,
// between the end of the time a lease was surely in force and another
// client's grant of its key while that lease was neither released nor
// lost with a crash. Negative: the grant came inside the lease (a
// within-lease double holder). A run that came within 2 ms of breaking
// tells a search more than one that came within a second (torture hunt
// reads it). Stats named min_... are merged across a stream's windows by
// their minimum.
const StatClosestGrant = "min_grant_gap_ns"

// closestGrant computes StatClosestGrant over every key; ok is false when
// no grant came while another client's lease stood.
func closestGrant(ix *index) (gap int64, ok bool) {
	gap = math.MaxInt64
	for _, key := range ix.keys {
		var open []*hold
		for _, b := range ix.perKey[key].holds {
			n := 0
			for _, a := range open {
				if a.released <= b.start {
					continue // released before b was granted: the lock was free
				}
				if a.client() == b.client() {
					open[n] = a
					n++
					continue
				}
				// end is the end of the validity b.start falls in (the gap
				// is then negative), or of the last one before it.
				_, end := a.validAt(b.start)
				if end == math.MinInt64 {
					continue // never surely in force: nothing to come close to
				}
				gap, ok = min(gap, b.start-end), true
				// Later grants come later still: a's closest is this one.
			}
			open = open[:n]
			if b.endedBy != "crash" {
				open = append(open, b)
			}
		}
	}
	return gap, ok
}

// doubleHolder describes the overlap of a (which started first) and b.
func doubleHolder(key string, a, b *hold) Anomaly {
	o := span{b.start, min(a.end, b.end)}
	an := Anomaly{
		Kind:      KindDoubleHolder,
		Clients:   []int{a.client(), b.client()},
		Processes: []int{a.process(), b.process()},
		Keys:      []string{key},
		Leases:    []string{a.lease.id, b.lease.id},
		StartNS:   o.from,
		EndNS:     o.to,
	}
	who := fmt.Sprintf("clients %d and %d both held %s", a.client(), b.client(), key)
	if a.client() == b.client() {
		who = fmt.Sprintf("client %d held %s twice at once (leases %s and %s)", a.client(), key, a.lease.id, b.lease.id)
	}
	when := fmt.Sprintf("from %s to %s", history.FormatTime(o.from), fmtEnd(o.to))
	if both := intersect(intersect(a.valid, b.valid), []span{o}); len(both) > 0 {
		an.Class = ClassWithinLease
		an.Detail = fmt.Sprintf("%s %s; both leases were in force from %s to %s, so the lock gave out a lease it had already given",
			who, when, history.FormatTime(both[0].from), fmtEnd(both[0].to))
		return an
	}
	an.Class = ClassLeaseOutlived
	// At the overlap's start at least one lease was not in force (else the
	// overlap would be within the lease): name it and when it ran out.
	late := a
	if ok, _ := a.validAt(o.from); ok {
		late = b
	}
	_, ended := late.validAt(o.from)
	var why string
	if ended == -1<<63 {
		why = fmt.Sprintf("client %d's acquire returned at %s, after its lease could already have run out",
			late.client(), history.FormatTime(late.start))
	} else {
		why = fmt.Sprintf("client %d's lease had expired at %s", late.client(), history.FormatTime(ended))
	}
	an.Detail = fmt.Sprintf("%s %s; %s", who, when, why)
	return an
}

// ShareOf is how many clients of run share one lock object (its --share),
// 1 when they do not or the header does not say.
func ShareOf(run *history.RunInfo) int {
	if run == nil {
		return 1
	}
	n, err := strconv.Atoi(run.Params["share"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// sharedObject says, in a run whose clients share lock objects (share >
// 1), whether the double holder an of clients a and b was within one
// object (clients of one group of share, as workloads groups them) or
// across two: the overlap of two threads of one process a library may
// allow, or another object's client let in, which no lock may.
func sharedObject(an Anomaly, a, b, share int) Anomaly {
	if share <= 1 {
		return an
	}
	one := a/share == b/share
	an.SharedObject = &one
	if one {
		an.Detail += fmt.Sprintf(" (one lock object: clients %d and %d share it, --share %d)", a, b, share)
	} else {
		an.Detail += fmt.Sprintf(" (two lock objects: clients %d and %d are of different groups of --share %d)", a, b, share)
	}
	return an
}

// fmtEnd renders the end of an interval, which may be the end of time.
func fmtEnd(ns int64) string {
	if ns >= forever {
		return "the end of the history"
	}
	return history.FormatTime(ns)
}
