package stream

import (
	"math"
	"sort"

	"github.com/locktorture/locktorture/checker/model"
	"github.com/locktorture/locktorture/history"
)

// When a window is checked, and how much of it the next one keeps.
//
// A window's own part closes after its length in time (Window, or Batch x
// Reach), or earlier once MaxEvents events were retained since the last
// check: at full speed with a long TTL a time-long own part would hold
// millions of events. What comes after the own part is needed only as far
// as some anomaly starting in it can reach, and that is known from the
// history itself rather than from the TTL alone:
//
//   - every operation called before the check's horizon has completed
//     (an operation in flight is hidden from the window, and a failed
//     acquire or a hold it would judge must be seen whole);
//   - every key that clients were trying to acquire during the own part
//     has had a hold begin at or after its end: a stuck stretch that
//     started in the own part ends at the next hold, so none can reach
//     further (the acquire that began that hold was waiting up to it, so
//     nothing after it changes the stretch).
//
// A key that no hold reached keeps the old bound, Reach after the own part,
// and the next window keeps Back of its history, so a stretch that goes on
// is seen from its start and joined (see horizon for the others). On a
// busy key a window thus costs its own events and a little more, whatever
// the TTL.

// DefaultMaxEvents is the default Options.MaxEvents. What the stream
// holds, and every judge's working set, grows with a window's events, not
// its length in time: at this many a full-speed window is bounded whatever
// the TTL (what the judges carry across windows is theirs to bound), and a live
// run reports an anomaly within a second or so of the window it fell in
// (--stop-on-anomaly, the status line). Twice as many would save a
// saved history's check about a fifth of its CPU (fewer edges re-checked)
// for twice the memory.
const DefaultMaxEvents = 1 << 15

// cut is a window whose own part has closed, waiting for the history
// after it that its check needs.
type cut struct {
	ownTo int64
	// waiting maps each key whose clients were trying to acquire it in the
	// own part to the return of the first ok acquire at or after ownTo, 0
	// until one is seen; pending counts the zeros.
	waiting map[string]int64
	pending int
	// need is the latest of those returns once pending is 0: every
	// operation called before it must have completed.
	need int64
	// blocker is an open operation called before need, seen by the last
	// look: nothing is ready before it completes.
	blocker int64
}

// openOp is an operation retained in the window and not completed yet.
type openOp struct {
	call    int64
	key     string
	acquire bool
	// claim: a release or refresh, judged (package checker's
	// lease-claims) by the window its return falls in.
	claim bool
}

func (s *Stream) maxEvents() int {
	if s.o.MaxEvents > 0 {
		return s.o.MaxEvents
	}
	return DefaultMaxEvents
}

// advance closes the own part when it is full and checks a closed window
// once the history after it is enough; t is the time of the event about to
// be added, so every event before t is in.
func (s *Stream) advance(t int64) bool {
	reach, win, _ := s.sizes()
	if s.cut == nil {
		start := s.ownFrom
		if s.first {
			start = 0
		}
		end := sat64(start, win)
		if t < end && s.ownEvents < s.maxEvents() {
			return false
		}
		ownTo := min(end, t)
		if ownTo <= s.ownFrom || ownTo <= 0 {
			return false
		}
		s.cut = s.newCut(ownTo)
	}
	return s.ready(t, reach)
}

// newCut closes the own part at ownTo.
func (s *Stream) newCut(ownTo int64) *cut {
	c := &cut{ownTo: ownTo, waiting: map[string]int64{}}
	for key, at := range s.acqAt {
		if at >= s.ownFrom {
			c.waiting[key] = 0
		}
	}
	for _, o := range s.open {
		if o.acquire {
			c.waiting[o.key] = 0
		}
	}
	c.pending = len(c.waiting)
	c.need = ownTo
	return c
}

// held notes an ok acquire of key returning at t, for the cut waiting on it.
func (c *cut) held(key string, t int64) {
	if at, ok := c.waiting[key]; ok && at == 0 && t >= c.ownTo {
		c.waiting[key] = max(t, 1)
		c.pending--
		c.need = max(c.need, t)
	}
}

// ready reports whether the closed window can be checked at t.
func (s *Stream) ready(t, reach int64) bool {
	c := s.cut
	if t >= sat64(c.ownTo, reach) {
		return true
	}
	if c.pending > 0 || t <= c.need {
		return false
	}
	if c.blocker != 0 {
		if _, open := s.open[c.blocker]; open {
			return false
		}
		c.blocker = 0
	}
	for id, o := range s.open {
		if o.call < c.need {
			c.blocker = id
			return false
		}
	}
	return true
}

// horizon returns, for the window just checked, how far back the next one
// must keep each key's history beyond what the lease rules keep anyway:
// Back for a key no hold reached after the own part, since a stretch
// without one may go on and the next window must see it from its start;
// nothing before the cut for the others. What a later window can need of
// such a key's past is kept by rules of their own: the operations of every
// lease that is held or may still be alive, with what ended its hold
// (prune), the operations not completed yet, and for an acquire a later
// window judges, the history back to its call less the spurious threshold
// (judgedLater). The rest was judged here: a stuck stretch ended at the
// hold after the cut, and a lease surely over cannot make a later
// operation legal or illegal. (One more TTL of every busy key was once
// kept as a margin: at full speed that was twice the own part, and each
// lock event was judged three times.)
func (s *Stream) horizon(c *cut, final bool) func(key string) int64 {
	_, _, back := s.sizes()
	if final {
		return func(string) int64 { return math.MaxInt64 }
	}
	return func(key string) int64 {
		if at, ok := c.waiting[key]; ok && at == 0 {
			return c.ownTo - back
		}
		return c.ownTo
	}
}

// judgedLater extends from to the calls of the acquires that a later window
// may judge spurious (a failed acquire is judged where it returns, see
// checker.Window.Own): those not completed yet and those that completed
// after the own part other than ok. That window must see every lease that
// may have been alive while they tried, and a spurious threshold before
// (the free stretch an attempt saw is weighed whole, and may have begun
// before the call), so their keys keep their history back that far. An
// acquire that was granted is judged only on the holds it overlaps, and
// the leases it may overlap are kept by the lease rules: at full speed,
// where every acquire of a busy key is granted, a quarter TTL of history
// for each of them would be most of what a window holds.
//
// Releases and refreshes are judged likewise where they return (package
// checker's lease-claims), on the leases that may have been alive at
// their call: the keys of those not completed, or completed after the own
// part, keep their history back to their call (the lease rules keep every
// lease alive at or after that).
func (s *Stream) judgedLater(ownTo int64, from func(string) int64) func(string) int64 {
	early := map[string]int64{}
	ttl := int64(s.mo.Liveness.TTL)
	if ttl <= 0 {
		ttl = s.ttl()
	}
	spurious := s.mo.Liveness.SpuriousNS(ttl) + model.ExpirySlack
	note := func(key string, at int64) {
		if v, ok := early[key]; !ok || at < v {
			early[key] = at
		}
	}
	for _, o := range s.open {
		switch {
		case o.acquire:
			note(o.key, o.call-spurious)
		case o.claim:
			note(o.key, o.call-model.ExpirySlack)
		}
	}
	i := sort.Search(len(s.buf), func(i int) bool { return s.buf[i].Time >= ownTo })
	for _, e := range s.buf[i:] {
		if !e.Type.IsCompletion() {
			continue
		}
		o := s.ops[e.ID]
		switch {
		case o == nil:
		case e.Type != history.OK && (e.Op == history.Acquire || e.Op == history.NestedAcquire):
			note(e.Key, o.call-spurious)
		case e.Op == history.Release || e.Op == history.Refresh:
			note(e.Key, o.call-model.ExpirySlack)
		}
	}
	return func(key string) int64 {
		f := from(key)
		if v, ok := early[key]; ok && v < f {
			return v
		}
		return f
	}
}
