package checker

import (
	"fmt"
	"math"
	"sort"

	"github.com/locktorture/locktorture/history"
)

// forever stands for "no end" in lease arithmetic: a lease without TTL, a
// hold the history never saw end.
const forever = history.Never

// sat64 is t+d, or forever if that would pass it.
func sat64(t, d int64) int64 {
	if t > forever-d {
		return forever
	}
	return t + d
}

// span is the half-open interval [from, to) on the history's clock.
type span struct{ from, to int64 }

func (s span) len() int64 { return s.to - s.from }

// index is one pass over a history that every built-in checker reads: the
// operations paired up, grouped by key, the leases they belong to, and the
// holds the clients believed they had. Checkers treat it as read-only, so a
// composed check can run them concurrently on one index.
type index struct {
	run    *history.RunInfo
	ops    []history.Operation // call order; ops[i].Lease filled in where the history left it out
	end    int64
	faults []history.Window
	// crashes maps a process to the time it crashed.
	crashes map[int]int64
	// byProcess lists each process's operations in call order.
	byProcess map[int][]int
	keys      []string
	perKey    map[string]*keyIndex
	// inflight lists, per key, the calls of acquires a windowed check
	// hid because they had not completed by its cutoff: each may have
	// taken the key since its call, so no time after it is surely free.
	inflight map[string][]int64
	// hidden are the operations a windowed check hid because they had
	// not completed by its cutoff, as invoked (Status Unknown, Return
	// forever): what the whole history completes later (see
	// Window.SetHidden).
	hidden []history.Operation
	// switches are the times of the master switches, in order.
	switches []int64
}

// keyIndex is everything that happened to one key.
type keyIndex struct {
	key      string
	lockOps  []int // acquire, release, refresh, and the nested ones of nested leases
	acquires []int
	releases []int
	reads    []int
	writes   []int
	leases   []*lease // acquired ones, in acquire call order
	byLease  map[string]*lease
	holds    []*hold // in start order
	// nested are the leases nested acquires took under a token of their
	// own: a lock that is not reentrant makes its holder's nested acquire
	// wait for its own key until the outer lease runs out, then take the
	// key afresh. The key is held then, which liveness and the lock's
	// model (lockOps) must see. The holder already holds the key by its
	// outer acquire, so the checkers of holders (mutual exclusion,
	// foreign release) do not count the nested hold again.
	nested []*lease
}

// lease is one acquisition's token and what was done with it.
type lease struct {
	key, id   string
	acquire   int // index into ops, -1 if the history never acquired it
	ttl       int64
	refreshes []int
	releases  []int
	hold      *hold // nil unless the acquire returned ok
	nested    bool  // taken by a nested acquire (see keyIndex.nested)
}

// hold is the time a client believed it held a key: from its acquire's
// return to its release's call (or its crash, or its process's end).
type hold struct {
	lease   *lease
	acq     *history.Operation
	start   int64
	end     int64
	endedBy string // "release", "crash", "unknown", "end"
	// valid is where the lease itself was surely in force: the union of
	// [renewal return, renewal call + ttl) over the acquire and every ok
	// refresh. A holder acting outside it is relying on luck.
	valid []span
	// released is the call of the first release of the lease, or forever.
	released int64
}

func (h *hold) client() int  { return h.acq.Client }
func (h *hold) process() int { return h.acq.Process }

// validAt reports whether t lies in the lease's validity, and if not, when
// the latest validity before t ended (math.MinInt64 if none did).
func (h *hold) validAt(t int64) (bool, int64) {
	last := int64(math.MinInt64)
	for _, v := range h.valid {
		if v.from <= t && t < v.to {
			return true, v.to
		}
		if v.to <= t && v.to > last {
			last = v.to
		}
	}
	return false, last
}

func newIndex(h *history.History) *index {
	ix := &index{
		run:       h.Run,
		ops:       h.Operations(),
		end:       h.End(),
		faults:    h.Faults(),
		crashes:   map[int]int64{},
		byProcess: map[int][]int{},
		perKey:    map[string]*keyIndex{},
	}
	for _, e := range h.Infos() {
		switch e.Op {
		case history.Crash:
			if _, seen := ix.crashes[e.Process]; !seen {
				ix.crashes[e.Process] = e.Time
			}
		case history.MasterSwitch:
			ix.switches = append(ix.switches, e.Time)
		}
	}
	b := indexer{ix: ix, byID: map[string]*lease{}, lastLease: map[procKey]string{}}
	for i := range ix.ops {
		b.add(i)
	}
	ix.keys = sortedKeys(ix.perKey)
	for _, key := range ix.keys {
		k := ix.perKey[key]
		for _, l := range k.leases {
			if a := &ix.ops[l.acquire]; a.Status == history.OK {
				l.hold = ix.makeHold(l, a)
				k.holds = append(k.holds, l.hold)
			}
		}
		sort.SliceStable(k.holds, func(i, j int) bool { return k.holds[i].start < k.holds[j].start })
		for _, l := range k.nested {
			if a := &ix.ops[l.acquire]; a.Status == history.OK {
				l.hold = ix.makeHold(l, a)
			}
		}
	}
	return ix
}

// procKey is one process's use of one key.
type procKey struct {
	proc int
	key  string
}

// indexer files each operation of an index under its key and lease.
type indexer struct {
	ix *index
	// byID finds the key of releases and refreshes that do not name it.
	byID map[string]*lease
	// lastLease remembers each process's latest acquisition per key, for
	// releases and refreshes that do not name their lease.
	lastLease map[procKey]string
}

func (b *indexer) key(key string) *keyIndex {
	k := b.ix.perKey[key]
	if k == nil {
		k = &keyIndex{key: key, byLease: map[string]*lease{}}
		b.ix.perKey[key] = k
	}
	return k
}

// add files operation i.
func (b *indexer) add(i int) {
	ix := b.ix
	o := &ix.ops[i]
	ix.byProcess[o.Process] = append(ix.byProcess[o.Process], i)
	switch o.Op {
	case history.Acquire, history.Release, history.Refresh:
	case history.Read:
		k := b.key(o.Key)
		k.reads = append(k.reads, i)
		return
	case history.Write:
		k := b.key(o.Key)
		k.writes = append(k.writes, i)
		return
	case history.NestedAcquire, history.NestedRelease:
		b.nested(o, i)
		return
	default:
		return
	}
	b.name(o)
	k := b.key(o.Key)
	k.lockOps = append(k.lockOps, i)
	if o.Lease == "" {
		if o.Op == history.Acquire {
			k.acquires = append(k.acquires, i)
		}
		if o.Op == history.Release {
			k.releases = append(k.releases, i)
		}
		return
	}
	l := k.byLease[o.Lease]
	if l == nil {
		l = &lease{key: o.Key, id: o.Lease, acquire: -1}
		k.byLease[o.Lease] = l
		if b.byID[o.Lease] == nil {
			b.byID[o.Lease] = l
		}
	}
	switch o.Op {
	case history.Acquire:
		k.acquires = append(k.acquires, i)
		if l.acquire < 0 {
			l.acquire = i
			l.ttl = int64(o.TTL)
			k.leases = append(k.leases, l)
		}
	case history.Release:
		k.releases = append(k.releases, i)
		l.releases = append(l.releases, i)
	case history.Refresh:
		l.refreshes = append(l.refreshes, i)
	}
}

// nested files a nested acquire that took the key under an owner of its
// own (see keyIndex.nested), and the nested releases of such a lease. A
// nested acquire of a reentrant lock names the owner of the process's
// outer acquire and is filed nowhere: the outer lease stands for it.
func (b *indexer) nested(o *history.Operation, i int) {
	if o.Lease == "" || o.Key == "" {
		return
	}
	k := b.key(o.Key)
	if o.Op == history.NestedRelease {
		if l := k.byLease[o.Lease]; l != nil && l.nested {
			l.releases = append(l.releases, i)
			k.lockOps = append(k.lockOps, i)
		}
		return
	}
	if o.Status == history.Fail || k.byLease[o.Lease] != nil {
		return
	}
	// The lease entered again is the one the invocation named; only when
	// it named none, the process's last acquisition of the key (which a
	// window may have left out).
	entered := o.Invoked
	if entered == "" {
		entered = b.lastLease[procKey{o.Process, o.Key}]
	}
	if history.SameOwner(entered, o.Lease) {
		return
	}
	l := &lease{key: o.Key, id: o.Lease, acquire: i, ttl: int64(o.TTL), nested: true}
	k.lockOps = append(k.lockOps, i)
	k.byLease[o.Lease] = l
	k.nested = append(k.nested, l)
	if b.byID[o.Lease] == nil {
		b.byID[o.Lease] = l
	}
}

// name fills in the lease (and key) a lock operation left out.
func (b *indexer) name(o *history.Operation) {
	if o.Op == history.Acquire {
		if o.Lease == "" && o.Status != history.Fail {
			// A lock that hands out no token still made one
			// acquisition; name it after the operation.
			o.Lease = fmt.Sprintf("op-%d", o.ID)
		}
		if o.Lease != "" {
			b.lastLease[procKey{o.Process, o.Key}] = o.Lease
		}
		return
	}
	if o.Key == "" && o.Lease != "" {
		if l := b.byID[o.Lease]; l != nil {
			o.Key = l.key
		}
	}
	last := b.lastLease[procKey{o.Process, o.Key}]
	if o.Lease == "" || o.Op == history.Release && history.SameAcquisition(last, o.Lease) {
		// A release names the process's acquisition of the key, at
		// whatever depth the lock reported it.
		o.Lease = last
	}
}

// makeHold works out how long the client believed it held the lease: until it
// called release, or its process crashed, or (if it never released) its
// process ended with an unknown operation, or else to the history's end.
func (ix *index) makeHold(l *lease, a *history.Operation) *hold {
	h := &hold{lease: l, acq: a, start: a.Return, end: ix.end, endedBy: "end", released: forever}
	for _, r := range l.releases {
		if c := ix.ops[r].Call; c >= a.Return && c < h.released {
			h.released = c
		}
	}
	if h.released < forever {
		h.end, h.endedBy = h.released, "release"
	}
	if t, ok := ix.crashes[a.Process]; ok && t >= a.Return && t < h.end {
		h.end, h.endedBy = t, "crash"
	}
	if h.endedBy == "end" {
		for _, i := range ix.byProcess[a.Process] {
			if o := &ix.ops[i]; o.Call >= a.Return && o.Status == history.Unknown && o.Call < h.end {
				h.end, h.endedBy = o.Call, "unknown"
				break
			}
		}
	}
	if h.end < h.start {
		h.end = h.start
	}
	h.valid = ix.validity(l)
	return h
}

// renewal is one moment a lease was (re)written: the acquire or an ok
// refresh, with the ttl it was written with.
type renewal struct{ call, ret, ttl int64 }

// renewals lists the acquire and the refreshes of l with the given outcomes.
func (ix *index) renewals(l *lease, statuses ...history.Type) []renewal {
	want := func(t history.Type) bool {
		for _, s := range statuses {
			if s == t {
				return true
			}
		}
		return false
	}
	var out []renewal
	if l.acquire >= 0 {
		if a := &ix.ops[l.acquire]; want(a.Status) {
			out = append(out, renewal{a.Start(), a.Return, l.ttl})
		}
	}
	for _, i := range l.refreshes {
		r := &ix.ops[i]
		if !want(r.Status) {
			continue
		}
		ttl := int64(r.TTL)
		if ttl == 0 {
			ttl = l.ttl
		}
		out = append(out, renewal{r.Call, r.Return, ttl})
	}
	return out
}

// validity is where the lease was surely in force: after a renewal returned
// the holder knows it, and the key cannot expire before the renewal's call
// plus ttl (the write happened no earlier than the call).
func (ix *index) validity(l *lease) []span {
	var out []span
	for _, r := range ix.renewals(l, history.OK) {
		to := forever
		if r.ttl > 0 {
			to = r.call + r.ttl
		}
		if to > r.ret {
			out = append(out, span{r.ret, to})
		}
	}
	return union(out)
}

// ttl is the lease time the liveness checks measure waits in: the run's
// configured ttl, else the largest acquire ttl seen, else one second.
func (ix *index) ttl() int64 {
	if ix.run != nil && ix.run.TTLMillis > 0 {
		return ix.run.TTLMillis * 1e6
	}
	var max int64
	for i := range ix.ops {
		if o := &ix.ops[i]; o.Op == history.Acquire && int64(o.TTL) > max {
			max = int64(o.TTL)
		}
	}
	if max > 0 {
		return max
	}
	return 1e9
}

// union sorts spans and merges those that overlap or touch.
func union(s []span) []span {
	out := make([]span, 0, len(s))
	for _, x := range s {
		if x.to > x.from {
			out = append(out, x)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].from < out[j].from })
	n := 0
	for _, x := range out {
		if n > 0 && x.from <= out[n-1].to {
			if x.to > out[n-1].to {
				out[n-1].to = x.to
			}
			continue
		}
		out[n] = x
		n++
	}
	return out[:n]
}

// intersect intersects two sorted, disjoint span lists.
func intersect(a, b []span) []span {
	var out []span
	for i, j := 0, 0; i < len(a) && j < len(b); {
		from, to := max(a[i].from, b[j].from), min(a[i].to, b[j].to)
		if from < to {
			out = append(out, span{from, to})
		}
		if a[i].to < b[j].to {
			i++
		} else {
			j++
		}
	}
	return out
}

// subtract removes the sorted, disjoint spans b from the sorted, disjoint a.
func subtract(a, b []span) []span {
	var out []span
	j := 0
	for _, x := range a {
		for j < len(b) && b[j].to <= x.from {
			j++
		}
		cur := x.from
		for k := j; k < len(b) && b[k].from < x.to; k++ {
			if b[k].from > cur {
				out = append(out, span{cur, b[k].from})
			}
			if b[k].to > cur {
				cur = b[k].to
			}
		}
		if cur < x.to {
			out = append(out, span{cur, x.to})
		}
	}
	return out
}

// longestWithin returns the longest piece of the sorted, disjoint spans s
// inside [from, to).
func longestWithin(s []span, from, to int64) span {
	i := sort.Search(len(s), func(i int) bool { return s[i].to > from })
	var best span
	for ; i < len(s) && s[i].from < to; i++ {
		p := span{max(s[i].from, from), min(s[i].to, to)}
		if p.len() > best.len() {
			best = p
		}
	}
	return best
}
