package checker

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/locktorture/locktorture/history"
)

// The lease-claims checker: what a lock reports of its own key (deleted,
// extended, not deleted) against what the lease's timing allows. The other
// lock checkers judge holders and orders; these kinds are a lock that says
// something of its key which the clock makes impossible, and which those
// checkers either miss or blame on the wrong thing.

const (
	// KindPhantomRelease: a release reported deleting the key although its
	// own lease had surely expired and no other lease could have been
	// there: there was nothing of its own to delete.
	KindPhantomRelease Kind = "phantom-release"
	// KindPhantomRenewal: a refresh reported extending its lease although
	// the lease had surely expired while another client's lease may have
	// been alive: a compare-and-extend cannot have found its own key, and
	// a renewal that re-creates the key overwrote a live lease.
	KindPhantomRenewal Kind = "phantom-renewal"
	// KindFailedRelease: a release of the releaser's own lease, surely
	// alive for the whole release, reported deleting nothing: the key
	// stayed until its TTL and every waiter waited it out.
	KindFailedRelease Kind = "failed-release"
)

// LeaseClaims returns the checker of what a lock reports of its own key:
// phantom releases and renewals (safety: an outcome the lease's timing
// makes impossible) and failed releases (liveness: a release that left a
// surely live key in place). Each is judged from the times of the lease's
// own writes alone, so a lock that reports what it cannot know is caught
// without any knowledge of how it works.
func LeaseClaims(opts ...Option) Checker {
	return newLockChecker("lease-claims", opts, leaseClaims)
}

// leaseClaims judges every ok release and refresh of every key.
func leaseClaims(_ context.Context, c *collector, ix *index) {
	var releases, refreshes int64
	nested, hidden := map[string]map[int][]int{}, map[string][]*history.Operation{}
	for i := range ix.ops {
		if o := &ix.ops[i]; o.Op == history.NestedAcquire || o.Op == history.NestedRelease {
			if nested[o.Key] == nil {
				nested[o.Key] = map[int][]int{}
			}
			nested[o.Key][o.Process] = append(nested[o.Key][o.Process], i)
		}
	}
	for i := range ix.hidden {
		h := &ix.hidden[i]
		hidden[h.Key] = append(hidden[h.Key], h)
	}
	for _, key := range ix.keys {
		kc := newKeyClaims(ix, ix.perKey[key], nested[key], hidden[key])
		for _, ri := range kc.k.releases {
			r := &ix.ops[ri]
			if r.Status != history.OK || r.Deleted == nil {
				continue
			}
			releases++
			if *r.Deleted {
				kc.phantomRelease(c, ri)
			} else {
				kc.failedRelease(c, ri)
			}
		}
		for _, l := range kc.leases() {
			for _, fi := range l.refreshes {
				if ix.ops[fi].Status == history.OK {
					refreshes++
					kc.phantomRenewal(c, l, fi)
				}
			}
		}
	}
	c.stat("keys", int64(len(ix.keys)))
	c.stat("releases", releases)
	c.stat("refreshes", refreshes)
}

// phantomRelease flags release ri, which reported deleting the key, if
// its own lease had surely run out before it was called while nothing
// else may have been in the key: no other lease may have been alive, no
// acquire was running, no write a window hid had begun. When another lease
// may have been alive, foreign-release judges the release instead.
func (kc *keyClaims) phantomRelease(c *collector, ri int) {
	r := &kc.ix.ops[ri]
	l := kc.k.byLease[r.Lease]
	if _, ok := kc.acquired(l); !ok || l.nested || l.ttl <= 0 {
		return // a lease without ttl never surely runs out
	}
	if kc.okAlive(l, r.Return, ri, r.Call) {
		return
	}
	end := kc.lifeEnd(l, r.Return, ri)
	if !surelyGone(end, r.Call) || kc.held(r.Call-expirySlack, r.Return) {
		return
	}
	c.add(Anomaly{
		Kind: KindPhantomRelease, Clients: []int{r.Client}, Processes: []int{r.Process}, Keys: []string{kc.k.key},
		Leases: []string{r.Lease}, StartNS: r.Call, EndNS: r.Return, owner: r.Return,
		Detail: fmt.Sprintf("client %d's release of lease %s reported deleting %s between %s and %s, but the lease could have lived only until %s and no other lease of the key could have been alive then: there was nothing of its own to delete",
			r.Client, r.Lease, kc.k.key, history.FormatTime(r.Call), history.FormatTime(r.Return), history.FormatTime(end)),
	})
}

// phantomRenewal flags refresh fi of lease l, which reported extending it,
// if l had surely run out before the refresh was called (counting its
// writes sent before it) while another client's lease of the key may have
// been alive: granted before the call, not released before it, not surely
// expired. With the key free a renewal that re-creates it is no lie. Only
// a refresh called while its holder held l is judged: one after it let go
// claims nothing the holder acts on (and a stream keeps a lease for its
// holder, not for a renewal long after).
func (kc *keyClaims) phantomRenewal(c *collector, l *lease, fi int) {
	f := &kc.ix.ops[fi]
	if _, ok := kc.acquired(l); !ok || l.ttl <= 0 || !heldAt(l.hold, f.Call) {
		return
	}
	if kc.okAlive(l, f.Call-1, -1, f.Call) {
		return
	}
	end := kc.lifeEnd(l, f.Call-1, -1)
	if !surelyGone(end, f.Call) {
		return
	}
	m, alive := kc.otherHolder(l, f)
	if m == nil {
		return
	}
	c.add(Anomaly{
		Kind: KindPhantomRenewal, Clients: []int{f.Client, m.client()}, Processes: []int{f.Process, m.process()},
		Keys: []string{kc.k.key}, Leases: []string{l.id, m.lease.id}, StartNS: f.Call, EndNS: f.Return, owner: f.Return,
		Detail: fmt.Sprintf("client %d's refresh of lease %s reported extending %s between %s and %s, but the lease could have lived only until %s, while client %d held the key since %s under lease %s, which could have lived until %s: a compare-and-extend cannot have found its own key, and a renewal that re-creates it overwrote a live lease",
			f.Client, l.id, kc.k.key, history.FormatTime(f.Call), history.FormatTime(f.Return), history.FormatTime(end),
			m.client(), history.FormatTime(m.start), m.lease.id, fmtEnd(alive)),
	})
}

// okAlive reports whether lease l's ok acquire and refreshes sent by t
// (aliveUntil) keep it alive at at, unless a release other than op skip
// deleted it: the common case, settled without working out the rest of
// its life (lifeEnd is never earlier).
func (kc *keyClaims) okAlive(l *lease, t int64, skip int, at int64) bool {
	return !surelyGone(min(kc.ix.aliveUntil(l, t), kc.deletedAt(l, skip)), at)
}

// heldAt reports whether h was still held at t: it had begun and had not
// ended (by a release call, a crash or an operation of unknown outcome)
// before t.
func heldAt(h *hold, t int64) bool {
	return h != nil && h.start <= t && (h.endedBy == "end" || t <= h.end)
}

// otherHolder finds the latest hold of another client than f's, on
// another lease than l, granted before f was called and not released
// before it, whose lease may still have been alive then; and how long it
// could have lived. The walk back stops once no earlier hold can have
// mattered at f's call (see heldTo).
func (kc *keyClaims) otherHolder(l *lease, f *history.Operation) (*hold, int64) {
	hs := kc.holds
	if kc.heldTo == nil {
		for _, h := range hs {
			to := min(h.released, sat64(kc.lifeEnd(h.lease, forever, -1), expirySlack))
			kc.heldTo = append(kc.heldTo, max(to, last(kc.heldTo)))
		}
	}
	i := sort.Search(len(hs), func(i int) bool { return hs[i].start >= f.Call })
	for i--; i >= 0 && kc.heldTo[i] >= f.Call; i-- {
		h := hs[i]
		if h.lease == l || h.client() == f.Client || h.released < f.Call {
			continue
		}
		if end := kc.lifeEnd(h.lease, f.Call, -1); !surelyGone(end, f.Call) {
			return h, end
		}
	}
	return nil, 0
}

// failedRelease flags release ri, which reported deleting nothing, if it
// was an outer release of the releaser's own lease and that lease was
// surely alive for the whole release: it returned before the lease's
// earliest expiry, the lease never lapsed before it, and nothing that can
// take a key away came between the acquire's call and the release's
// return: no fault, no master switch, no other release that deleted or
// may have, no other lease granted the key (mutual exclusion reports that;
// the key was not the releaser's to delete then). A reentrant release
// that reports a count left deletes nothing by design (a count that
// should not be there is reentry-count's).
func (kc *keyClaims) failedRelease(c *collector, ri int) {
	ix := kc.ix
	r := &ix.ops[ri]
	if r.Value != nil && *r.Value > 0 {
		return
	}
	l := kc.k.byLease[r.Lease]
	a, ok := kc.acquired(l)
	if !ok || l.nested {
		return
	}
	exp := kc.earliestExpiry(l, r.Call)
	if exp < forever && r.Return >= exp-expirySlack || kc.lapsed(l, ri, r.Call) {
		return
	}
	if history.ActiveAt(ix.faults, a.Call, r.Return) || kc.switched(a.Call, r.Return) || kc.disturbed(ri, a.Call, r.Return) ||
		kc.granted(a.Return, r.Return) {
		return
	}
	until := "never expire"
	if exp < forever {
		until = "not expire before " + history.FormatTime(exp)
	}
	c.add(Anomaly{
		Kind: KindFailedRelease, Clients: []int{r.Client}, Processes: []int{r.Process}, Keys: []string{kc.k.key},
		Leases: []string{r.Lease}, StartNS: r.Call, EndNS: r.Return, owner: r.Return,
		Detail: fmt.Sprintf("client %d's release of lease %s deleted nothing between %s and %s, although the lease, acquired at %s, could %s and no fault, master switch or other release came between: the key stayed until its ttl and every waiter waited it out",
			r.Client, r.Lease, history.FormatTime(r.Call), history.FormatTime(r.Return), history.FormatTime(a.Call), until),
	})
}

// earliestExpiry is the earliest moment lease l's key could expire, judging
// from its writes sent before t: the send of the last one surely in place
// by then (an ok acquire or refresh that returned by t) plus its ttl, or
// earlier if a write that may have landed after it (one sent before t and
// not answered before that send) set an earlier one. A window's hidden
// refreshes of l are such writes; a key without ttl never expires.
func (kc *keyClaims) earliestExpiry(l *lease, t int64) int64 {
	ix := kc.ix
	latest := int64(math.MinInt64)
	for _, rn := range ix.renewals(l, history.OK) {
		if rn.ret <= t {
			latest = max(latest, rn.call)
		}
	}
	exp := forever
	expires := func(call, ttl int64) {
		if ttl > 0 {
			exp = min(exp, sat64(call, ttl))
		}
	}
	for _, rn := range ix.renewals(l, history.OK, history.Unknown, history.Fail) {
		if rn.call < t && rn.ret >= latest {
			expires(rn.call, rn.ttl)
		}
	}
	for _, h := range kc.hidden {
		if h.Op == history.Refresh && h.Lease == l.id && h.Call < t {
			ttl := int64(h.TTL)
			if ttl == 0 {
				ttl = l.ttl
			}
			expires(h.Call, ttl)
		}
	}
	return exp
}

// lapsed reports whether lease l surely ran out at some moment before t
// and was written again after: a write sent once every earlier one had
// surely run out. A renewal that says it found its key then is
// phantom-renewal's to judge; what the key held after it is not the
// lease's to answer for.
func (kc *keyClaims) lapsed(l *lease, skip int, t int64) bool {
	var s []span
	for _, x := range kc.lifeSpans(l, skip) {
		if x.from < t {
			s = append(s, x)
		}
	}
	sort.Slice(s, func(i, j int) bool { return s[i].from < s[j].from })
	end := int64(math.MinInt64)
	for i, x := range s {
		if i > 0 && surelyGone(end, x.from) {
			return true
		}
		end = max(end, x.to)
	}
	return false
}

// switched reports whether a master switch came in [from, to].
func (kc *keyClaims) switched(from, to int64) bool {
	s := kc.ix.switches
	i := sort.Search(len(s), func(i int) bool { return s[i] >= from })
	return i < len(s) && s[i] <= to
}

// disturbed reports whether a release of the key other than op ri, run at
// some moment of [from, to], deleted it or may have (its outcome is
// unknown), or was still running when to came (what it did is not settled
// by then; a window sees it so).
func (kc *keyClaims) disturbed(ri int, from, to int64) bool {
	ops := kc.ix.ops
	i := sort.Search(len(kc.all), func(i int) bool { return ops[kc.all[i]].Call > to })
	for i--; i >= 0 && kc.allRet[i] >= from; i-- {
		j := kc.all[i]
		o := &ops[j]
		if j == ri || o.Return < from {
			continue
		}
		if o.Status == history.Unknown || deleted(o) || o.Return > to {
			return true
		}
	}
	return false
}

// granted reports whether some acquire of the key returned ok in (from,
// to]: another lease was granted the key.
func (kc *keyClaims) granted(from, to int64) bool {
	g := kc.grants
	i := sort.Search(len(g), func(i int) bool { return g[i] > from })
	return i < len(g) && g[i] <= to
}
