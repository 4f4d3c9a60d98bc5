package checker

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/locktorture/locktorture/history"
)

// KindReentryCount: a reentrant lock's hold count for an owner disagreed
// with the owner's own nesting, beyond what its unknown operations and a
// possible expiry of the key could explain.
const KindReentryCount Kind = "reentry-count"

// Classes of reentry-count.
const (
	// ClassDoubleCount: the count was higher than the nesting: an
	// increment applied twice (a script replayed after its reply was
	// lost), so the outermost release leaves the key held until its TTL.
	ClassDoubleCount Class = "double-count"
	// ClassLostCount: the count was lower than the nesting, or gone, while
	// the key could not have expired: a decrement applied twice (a nested
	// release then frees the key under its outer holder) or the key lost
	// by Redis itself.
	ClassLostCount Class = "lost-count"
)

// Reentrant returns the checker of the reentrant workload: a model of an
// owner-aware counting mutex. Every acquire and nested-acquire reports the
// count it left (the depth in its lease token, "<owner>#<n>/<depth>" as
// the reentrant locks write it), every release and nested-release the count
// left after it (Value, -1 when the key no longer held the owner). Per owner
// and key the model keeps the range the real count may be in: an ok
// operation must land in the range its predecessor left plus or minus one,
// and then pins the count; an unknown acquire may have added any number of
// holds (go-redis replays it), an unknown release removed any; a count back
// at 1 (or a release finding the owner gone) is legal once the key could
// have expired, that is when no renewal (acquire, refresh, partial release)
// that returned before the operation began was still within its TTL.
// Histories of locks whose tokens carry no depth are not judged.
func Reentrant(opts ...Option) Checker {
	return newCarryingChecker("reentrant", opts, func() carrier { return &reentrantJudge{groups: map[ownerKey]*ownerModel{}} })
}

// ownerKey is one owner's hold of one key.
type ownerKey struct{ owner, key string }

type countModel struct {
	lo, hi  int64
	renewed []renewal // ok renewals: call, return, ttl
	last    *history.Operation
}

const unbounded = math.MaxInt64 / 4

// mayHaveExpired reports whether the owner's key could have expired before
// o took effect: no renewal that returned before o's call still covers o's
// return.
func (m *countModel) mayHaveExpired(o *history.Operation) bool {
	for _, r := range m.renewed {
		if r.ret <= o.Call && r.call+r.ttl > o.Return {
			return false
		}
	}
	return true
}

// reentrantJudge carries, per owner and key, the model (the count's range,
// the renewals that may still keep the key) and the operations it cannot
// order yet; an owner whose key is surely free is forgotten.
type reentrantJudge struct{ groups map[ownerKey]*ownerModel }

// ownerModel is one owner's hold of one key: its model and the operations
// waiting to be judged in call order.
type ownerModel struct {
	countModel
	q inOrder
}

func (j *reentrantJudge) judge(c *collector, w *Window) {
	ttl := int64(0)
	if w.Run != nil {
		ttl = w.Run.TTLMillis * 1e6
	}
	var owners, judged int64
	for i := range w.Ops {
		o := &w.Ops[i]
		switch o.Op {
		case history.Acquire, history.NestedAcquire, history.Release, history.NestedRelease, history.Refresh:
		default:
			continue
		}
		owner, _, _ := history.ParseReentrantLease(o.Lease)
		if owner == "" {
			continue
		}
		k := ownerKey{owner, o.Key}
		g := j.groups[k]
		if g == nil {
			g = &ownerModel{q: byCall()}
			j.groups[k] = g
			owners++
		}
		// Refreshes run beside the owner's own calls: they only count as
		// renewals, and one that returned before an operation was called
		// is here before that operation is judged.
		if o.Op == history.Refresh {
			if o.Status == history.OK {
				g.renewed = append(g.renewed, renewal{o.Call, o.Return, opTTL(o, ttl)})
			}
			continue
		}
		g.q.push(o)
	}
	for _, k := range sortedOwners(j.groups) {
		g := j.groups[k]
		for _, o := range g.q.pop(w.Later) {
			if j.step(c, k, &g.countModel, o, ttl) {
				judged++
			}
		}
		// Every operation judged later returns after Later: a renewal
		// that ran out by then covers none of them.
		n := 0
		for _, r := range g.renewed {
			if r.call+r.ttl > w.Later {
				g.renewed[n] = r
				n++
			}
		}
		g.renewed = g.renewed[:n]
		if g.lo == 0 && g.hi == 0 && n == 0 && len(g.q.q) == 0 {
			delete(j.groups, k)
		}
	}
	c.stat("owners", owners)
	c.stat("judged", judged)
}

// sortedOwners lists m's owners and keys in order, so that anomalies come
// out the same on every run.
func sortedOwners(m map[ownerKey]*ownerModel) []ownerKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b ownerKey) int {
		return cmp.Or(cmp.Compare(a.owner, b.owner), cmp.Compare(a.key, b.key))
	})
}

func opTTL(o *history.Operation, run int64) int64 {
	if o.TTL > 0 {
		return int64(o.TTL)
	}
	if run > 0 {
		return run
	}
	return forever
}

// step applies o to the model and reports whether it judged a count.
func (j *reentrantJudge) step(c *collector, k ownerKey, m *countModel, o *history.Operation, ttl int64) bool {
	defer func() { m.last = o }()
	acquire := o.Op == history.Acquire || o.Op == history.NestedAcquire
	switch {
	case acquire && o.Status == history.Unknown:
		m.hi = unbounded
		return false
	case acquire && o.Status == history.Fail:
		m.lo, m.hi = 0, 0 // another owner held the key
		return false
	case !acquire && o.Status == history.Unknown:
		m.lo = 0
		return false
	case o.Status != history.OK:
		return false
	}
	if acquire {
		_, depth, ok := history.ParseReentrantLease(o.Lease)
		if !ok {
			return false
		}
		lo, hi := m.lo+1, sat(m.hi, 1)
		expirable := m.mayHaveExpired(o)
		if (depth < lo || depth > hi) && !(depth == 1 && expirable) {
			c.add(countAnomaly(k, o, m.last, depth, lo, hi, expirable))
		}
		m.lo, m.hi = depth, depth
		m.renewed = append(m.renewed, renewal{o.Call, o.Return, opTTL(o, ttl)})
		return true
	}
	if o.Value == nil {
		return false // a lock that does not report its count
	}
	left := *o.Value
	lo, hi := max(m.lo-1, 0), sat(m.hi, -1)
	switch {
	case left < 0:
		if m.lo > 0 && !m.mayHaveExpired(o) {
			c.add(countAnomaly(k, o, m.last, left, lo, hi, false))
		}
		left = 0
	case left < lo || left > hi:
		c.add(countAnomaly(k, o, m.last, left, lo, hi, false))
	}
	if left > 0 {
		m.renewed = append(m.renewed, renewal{o.Call, o.Return, opTTL(o, ttl)})
	}
	m.lo, m.hi = left, left
	return true
}

// sat adds d to a bound that may be unbounded.
func sat(v, d int64) int64 {
	if v >= unbounded {
		return unbounded
	}
	return max(v+d, 0)
}

func countAnomaly(k ownerKey, o, prev *history.Operation, got, lo, hi int64, expirable bool) Anomaly {
	a := Anomaly{
		Kind: KindReentryCount, Class: ClassLostCount,
		Clients: []int{o.Client}, Processes: []int{o.Process}, Keys: []string{k.key}, Leases: []string{o.Lease},
		StartNS: o.Call, EndNS: o.Return,
	}
	acquire := o.Op == history.Acquire || o.Op == history.NestedAcquire
	// Above the range, or on a key that may have expired (a fresh count
	// would be 1) anything above 1: an increment counted twice.
	if got > hi || (acquire && expirable && got > 1) {
		a.Class = ClassDoubleCount
	}
	want := fmt.Sprintf("%d", lo)
	switch {
	case hi >= unbounded:
		want = fmt.Sprintf("at least %d", lo)
	case hi != lo:
		want = fmt.Sprintf("%d to %d", lo, hi)
	}
	if acquire && expirable {
		want += " (or 1 on a key that expired)"
	}
	what := fmt.Sprintf("reported a hold count of %d", got)
	if !acquire {
		what = fmt.Sprintf("left a hold count of %d", got)
		want += " left"
	}
	if got < 0 {
		what = "found the key no longer held by its owner, although it could not have expired"
	}
	after := ""
	if prev != nil {
		after = fmt.Sprintf(" (after its %s at %s)", prev.Op, history.FormatTime(prev.Return))
	}
	a.Detail = fmt.Sprintf("owner %s's %s of %s at %s%s %s; its own nesting calls for %s",
		k.owner, o.Op, k.key, history.FormatTime(o.Return), after, what, want)
	return a
}
