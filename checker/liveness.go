package checker

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/distinct"
)

// LivenessOptions configure the liveness checker.
type LivenessOptions struct {
	// TTL is the unit waits are measured in. Zero: the run's configured
	// ttl, else the largest acquire ttl in the history, else one second.
	TTL time.Duration
	// StuckFactor is how many TTLs without a successful acquire, while
	// clients wait and nobody holds the key, make a stuck lock. Zero
	// means 3.
	StuckFactor float64
	// SpuriousThreshold is how long the lock must have been surely free
	// during a failed acquire for the failure to be spurious. Zero means
	// TTL/4; it is never less than a millisecond.
	SpuriousThreshold time.Duration
}

// SpuriousNS is SpuriousThreshold, in ns, for a lease time of ttl ns: how
// long the lock must have been surely free during a failed acquire. A
// stream (package checker/stream) keeps that much history before the call
// of an acquire a later window judges.
func (o LivenessOptions) SpuriousNS(ttl int64) int64 {
	t := int64(o.SpuriousThreshold)
	if t <= 0 {
		t = ttl / 4
	}
	return max(t, int64(time.Millisecond))
}

// Liveness returns the checker of the lock's second promise: a free lock
// can be taken. It reports stuck locks (a key nobody could acquire for
// StuckFactor TTLs while clients were waiting, nobody believed they held it
// and no fault was active: a crashed holder's key without expiry, say) and
// spurious failures (an acquire that gave up although no lease could have
// been alive for a good while during it: an orphaned key, say one a retried
// SET NX wrote and then reported "not acquired").
func Liveness(o LivenessOptions, opts ...Option) Checker {
	return newLockChecker("liveness", opts, (&liveness{o: o}).judge)
}

type liveness struct{ o LivenessOptions }

func (l *liveness) judge(_ context.Context, c *collector, ix *index) {
	ttl := int64(l.o.TTL)
	if ttl <= 0 {
		ttl = ix.ttl()
	}
	factor := l.o.StuckFactor
	if factor <= 0 {
		factor = 3
	}
	stuckAfter := int64(factor * float64(ttl))
	threshold := l.o.SpuriousNS(ttl)

	var faults []span
	for _, w := range ix.faults {
		// An instant fault (a client crash) is over when it happens: the
		// lock it leaves stuck is exactly what this checker is for.
		if w.End-w.Start < int64(time.Millisecond) {
			continue
		}
		faults = append(faults, span{w.Start, w.End + 1})
	}
	faults = union(faults)
	var acquires, failed int64
	for _, key := range ix.keys {
		k := ix.perKey[key]
		for _, i := range k.acquires {
			acquires++
			if ix.ops[i].Status == history.Fail {
				failed++
			}
		}
		stuck := l.stuck(c, ix, k, ttl, stuckAfter, faults)
		l.spurious(c, ix, k, threshold, stuck)
	}
	c.stat("keys", int64(len(ix.keys)))
	c.stat("acquires", acquires)
	c.stat("failed_acquires", failed)
	c.stat("ttl_ns", ttl)
}

// stuck finds stretches of at least stuckAfter in which clients were
// waiting to acquire the key (an acquire in flight, or a client between
// two attempts less than a ttl apart), nobody believed they held it, no
// acquire succeeded and no fault was active.
func (l *liveness) stuck(c *collector, ix *index, k *keyIndex, ttl, stuckAfter int64, faults []span) []span {
	var attempts, holds []span
	for _, i := range k.acquires {
		o := &ix.ops[i]
		// Bridging pauses shorter than a ttl counts a client that retries
		// on its own as waiting all along. An acquire that recorded its
		// attempts was waiting only around them: a longer gap between two
		// is the harness stalled, not a client kept waiting by the lock.
		if !o.Looked() {
			attempts = append(attempts, span{o.Call, o.Return + ttl})
			continue
		}
		for _, t := range o.Tries {
			attempts = append(attempts, span{t.From, t.To + ttl})
		}
	}
	waiting := union(attempts)
	for i := range waiting {
		waiting[i].to = max(waiting[i].from, waiting[i].to-ttl)
	}
	for _, h := range k.holds {
		holds = append(holds, h.believed())
	}
	for _, l := range k.nested {
		if l.hold != nil {
			holds = append(holds, l.hold.believed())
		}
	}
	holds = append(holds, refused(ix, k)...)
	holds = append(holds, maybeTaken(ix, k, ttl)...)
	idle := subtract(subtract(waiting, union(holds)), faults)
	var stuck []span
	for _, s := range idle {
		if s.len() < stuckAfter {
			continue
		}
		c.add(l.stuckAnomaly(ix, k, s, ttl))
		stuck = append(stuck, s)
	}
	return stuck
}

// believed is the span a holder believed it held the key. A hold that
// runs to the end of the history lasts for ever: its holder is alive and
// may release yet.
func (h *hold) believed() span {
	end := h.end
	if h.endedBy == "end" {
		end = forever
	}
	return span{h.start, max(end, h.start+1)}
}

func (l *liveness) stuckAnomaly(ix *index, k *keyIndex, s span, ttl int64) Anomaly {
	a := Anomaly{Kind: KindStuckLock, Keys: []string{k.key}, StartNS: s.from, EndNS: s.to}
	st := &stuckSpan{key: k.key, ttl: ttl, waiters: map[int64]bool{}, end: ix.end}
	a.stuck = st
	// The last ok acquire before the stretch, and any unknown one after it.
	var last, unknown *history.Operation
	for _, i := range k.acquires {
		o := &ix.ops[i]
		if o.Call >= s.from {
			break // acquires are in call order
		}
		switch {
		case o.Status == history.OK && o.Return <= s.from:
			last, unknown = o, nil
		case o.Status == history.Unknown:
			unknown = o
		}
	}
	var who string
	if last == nil {
		who = "no client had ever acquired it"
	} else {
		a.Clients = append(a.Clients, last.Client)
		a.Processes = append(a.Processes, last.Process)
		a.Leases = append(a.Leases, last.Lease)
		who = fmt.Sprintf("client %d last acquired it at %s (lease %s)", last.Client, history.FormatTime(last.Return), last.Lease)
		if h := k.byLease[last.Lease].hold; h != nil {
			switch h.endedBy {
			case "crash":
				who += fmt.Sprintf(" and crashed at %s without releasing it", history.FormatTime(h.end))
			case "unknown":
				who += fmt.Sprintf(", then its process ended at %s with an operation of unknown outcome", history.FormatTime(h.end))
			case "release":
				who += fmt.Sprintf(" and began releasing it at %s", history.FormatTime(h.end))
				for _, ri := range h.lease.releases {
					if r := &ix.ops[ri]; r.Call == h.released {
						who += releaseOutcome(r)
						break
					}
				}
			}
		}
	}
	if unknown != nil {
		a.Clients = append(a.Clients, unknown.Client)
		a.Processes = append(a.Processes, unknown.Process)
		who += fmt.Sprintf("; client %d's acquire at %s has an unknown outcome", unknown.Client, history.FormatTime(unknown.Call))
	}
	for _, i := range k.acquires {
		if o := &ix.ops[i]; o.Call < s.to && o.Return > s.from {
			a.Clients = append(a.Clients, o.Client)
			st.waiters[o.ID] = true
		}
	}
	a.Clients = distinct.Of(a.Clients...)
	st.who = who
	a.Detail = st.detail(s.from, s.to)
	return a
}

// stuckSpan is what a stuck-lock anomaly keeps to be joined with the rest
// of its stretch: a windowed check (package checker/stream) sees a stretch
// longer than a window in parts, and must report it once, whole, as a
// check of the whole history does.
type stuckSpan struct {
	key     string
	ttl     int64
	waiters map[int64]bool // the acquires that tried during the stretch
	who     string         // who held the key last, and how it ended
	end     int64          // the end of the history the check saw
}

func (st *stuckSpan) detail(from, to int64) string {
	end := "to " + history.FormatTime(to)
	if to >= st.end {
		end = "to the end of the history at " + history.FormatTime(to)
	}
	return fmt.Sprintf("no acquire of %s succeeded from %s %s (%.1f ttl of %s) although clients tried %d times and nobody held it; %s",
		st.key, history.FormatTime(from), end, float64(to-from)/float64(st.ttl), history.FormatDuration(st.ttl), len(st.waiters), st.who)
}

// extend joins b, a later part of the same stretch, to a.
func (a *Anomaly) extend(b Anomaly) {
	if a.stuck == nil || b.stuck == nil || b.EndNS < a.EndNS {
		return
	}
	a.EndNS = b.EndNS
	a.stuck.end = max(a.stuck.end, b.stuck.end)
	for id := range b.stuck.waiters {
		a.stuck.waiters[id] = true
	}
	a.Clients = distinct.Of(append(a.Clients, b.Clients...)...)
	a.Detail = a.stuck.detail(a.StartNS, a.EndNS)
}

func releaseOutcome(r *history.Operation) string {
	switch {
	case r.Status == history.Unknown:
		return ", with an unknown outcome"
	case r.Status == history.OK && r.Deleted != nil && !*r.Deleted:
		return ", which deleted nothing"
	case r.Status == history.OK:
		return ", which deleted the key"
	}
	return ", which failed"
}

// spurious flags failed acquires during which, for at least threshold, no
// lease could have been alive. A lease (of an ok or unknown acquire) may be
// alive from its acquire's call until its own release deleted it, or until
// it surely expired: the return of its last renewal plus ttl (for an
// unknown acquire or refresh, the time the client gave up waiting for it;
// for a lock that renews unseen, the end of its hold).
// Failures inside a stuck stretch are not reported again one by one.
func (l *liveness) spurious(c *collector, ix *index, k *keyIndex, threshold int64, stuck []span) {
	var alive []span
	for _, le := range slices.Concat(k.leases, k.nested) {
		a := &ix.ops[le.acquire]
		if a.Status == history.Fail {
			continue
		}
		until := int64(math.MinInt64)
		for _, rn := range ix.renewals(le, history.OK, history.Unknown) {
			if rn.ttl <= 0 {
				until = forever
				break
			}
			until = max(until, rn.ret+rn.ttl)
		}
		if h := le.hold; h != nil && ix.run != nil && ix.run.RenewsUnseen {
			// Renewed unseen for as long as its holder kept it.
			until = max(until, sat64(h.believed().to, le.ttl))
		}
		for _, ri := range le.releases {
			r := &ix.ops[ri]
			if r.Status == history.OK && r.Deleted != nil && *r.Deleted && r.Return >= a.Call {
				until = min(until, r.Return)
			}
		}
		alive = append(alive, span{a.Call, until})
	}
	alive = append(alive, refused(ix, k)...)
	for _, call := range ix.inflight[k.key] {
		alive = append(alive, span{call, forever})
	}
	free := subtract([]span{{0, ix.end}}, union(alive))
	blind := blindSpans(ix)
	for _, i := range k.acquires {
		o := &ix.ops[i]
		if o.Status != history.Fail {
			continue
		}
		// While a fault held this very client (paused, slowed, cut off) it
		// could not see the lock was free: that time proves nothing.
		seen := subtract(free, blind[o.Client])
		var s span
		if o.Looked() {
			s = sawFree(seen, o.Tries, threshold)
			s = span{max(s.from, o.Call), min(s.to, o.Return)}
			if s.len() <= 0 {
				continue
			}
		} else {
			s = longestWithin(seen, o.Call, o.Return)
			// A client that looked at the lock only now and then (its
			// replies were slow) may have missed a free stretch shorter
			// than two of its looks without anything being wrong.
			need := threshold
			if o.Attempts > 0 {
				need = max(need, 2*(o.Return-o.Call)/int64(o.Attempts))
			}
			if s.len() < need {
				continue
			}
		}
		if stuckCovers(s, stuck, threshold) {
			continue
		}
		c.add(Anomaly{
			Kind:      KindSpuriousFailure,
			Clients:   []int{o.Client},
			Processes: []int{o.Process},
			Keys:      []string{k.key},
			Leases:    []string{},
			StartNS:   s.from,
			EndNS:     s.to,
			owner:     o.Return,
			Detail: fmt.Sprintf("client %d's acquire of %s (%s to %s) failed although no lease could have been alive from %s to %s",
				o.Client, k.key, history.FormatTime(o.Call), history.FormatTime(o.Return), history.FormatTime(s.from), history.FormatTime(s.to)),
		})
	}
}

// stuckCovers reports whether the free span s of a failed acquire is what a
// stuck stretch reported already: s meets one of them (or starts within
// threshold of its end: a sliver past it, the last attempt's reply) and
// leaves less than threshold outside them. A stuck stretch elsewhere on
// the key says nothing about s.
func stuckCovers(s span, stuck []span, threshold int64) bool {
	for _, st := range stuck {
		if st.from < s.to && s.from < st.to+threshold {
			return longestWithin(subtract([]span{s}, stuck), s.from, s.to).len() < threshold
		}
	}
	return false
}

// sawFree returns the free stretch (of at least threshold) in which one of
// the acquire's attempts ran from its first send to its last reply, with a
// margin for Redis's millisecond expiry: that attempt found the lock free
// and was still refused. Free time between attempts proves nothing, since
// the client was not looking then.
func sawFree(free []span, tries []history.Try, threshold int64) span {
	var best span
	for _, t := range tries {
		from, to := t.From-expirySlack, t.To+expirySlack
		s := longestWithin(free, from, to+1)
		if s.from > from || s.to < to {
			continue // not free for the whole attempt
		}
		// The whole free stretch around the attempt, to report and to
		// weigh against the threshold.
		i := sort.Search(len(free), func(i int) bool { return free[i].to > from })
		if i < len(free) && free[i].from <= from && free[i].to >= to && free[i].len() >= threshold && free[i].len() > best.len() {
			best = free[i]
		}
	}
	return best
}

// refused returns the spans in which failed acquires of the key held it
// anyway (a late lease the lock refused and deleted): the others were
// rightly kept out then.
// maybeTaken is where an acquire of unknown outcome may have held the key:
// its command may have landed any time before its client gave up, and the
// key it wrote lives a ttl after that. A stretch of timed-out acquires is a
// slow or broken path to Redis, not a free lock nobody could take.
func maybeTaken(ix *index, k *keyIndex, ttl int64) []span {
	var out []span
	acquires := k.acquires
	for _, l := range k.nested {
		acquires = append(acquires[:len(acquires):len(acquires)], l.acquire)
	}
	for _, i := range acquires {
		o := &ix.ops[i]
		if o.Status != history.Unknown {
			continue
		}
		d := ttl
		if o.TTL > 0 {
			d = int64(o.TTL)
		}
		until := forever
		if d > 0 && o.Return < forever-d {
			until = o.Return + d
		}
		out = append(out, span{o.Call, until})
	}
	return out
}

func refused(ix *index, k *keyIndex) []span {
	var out []span
	for _, i := range k.acquires {
		if o := &ix.ops[i]; o.Status == history.Fail && o.Held.To > 0 {
			out = append(out, span{o.Held.From, o.Held.To + 1})
		}
	}
	return out
}

// blindSpans returns, per client, the windows of faults aimed at that client
// alone (the schedule names them "c<N>" or "c<N> ..." in the target).
func blindSpans(ix *index) map[int][]span {
	out := map[int][]span{}
	for _, w := range ix.faults {
		name, _, _ := strings.Cut(w.Target, " ")
		if len(name) < 2 || name[0] != 'c' {
			continue
		}
		n, err := strconv.Atoi(name[1:])
		if err != nil {
			continue
		}
		out[n] = union(append(out[n], span{w.Start, w.End + 1}))
	}
	return out
}
