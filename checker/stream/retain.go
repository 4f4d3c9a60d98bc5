package stream

import (
	"sort"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/checker/model"
	"github.com/locktorture/locktorture/history"
)

// What a window's events are, and what the stream keeps of them for the
// windows after it.

// window returns the retained events up to cutoff, with the invocations of
// operations that have not completed by then masked, releases aside: an
// operation in flight is not one of unknown outcome (a read of a paused
// holder would end its hold there), but a release in flight has ended its
// hold already and may have deleted the key, so it stays, of unknown
// outcome. The caller must call unmask once the window is checked.
func (s *Stream) window(cutoff int64) []history.Event {
	n := sort.Search(len(s.buf), func(i int) bool { return s.buf[i].Time > cutoff })
	out := s.buf[:n]
	s.masked = s.masked[:0]
	for i := range out {
		e := &out[i]
		if e.Type != history.Invoke || cutoff == forever || e.Op == history.Release || e.Op == history.NestedRelease {
			continue
		}
		if o := s.ops[e.ID]; o != nil && (!o.done || o.last > cutoff) {
			s.masked = append(s.masked, masked{i, e.Type, e.Op})
			// An instant that no checker reads: not an operation, not a
			// fault start or heal, not a crash or a switch.
			e.Type, e.Op = history.Info, history.FaultStep
		}
	}
	s.maxOps = max(s.maxOps, int64(n/2))
	return out
}

// masked is an invocation hidden from one window.
type masked struct {
	i  int
	t  history.Type
	op history.Op
}

// inflight returns, per key, the calls of the acquires the window masks.
func (s *Stream) inflight() map[string][]int64 {
	var out map[string][]int64
	for _, m := range s.masked {
		if m.op == history.Acquire || m.op == history.NestedAcquire {
			if out == nil {
				out = map[string][]int64{}
			}
			e := &s.buf[m.i]
			out[e.Key] = append(out[e.Key], e.Time)
		}
	}
	return out
}

// hidden returns the operations the window masks, as they were invoked:
// a judge must read each as still running, whatever it turns out to be.
func (s *Stream) hidden() []history.Operation {
	var out []history.Operation
	for _, m := range s.masked {
		e := s.buf[m.i]
		e.Type, e.Op = m.t, m.op
		out = append(out, history.Pair(e, nil, forever))
	}
	return out
}

func (s *Stream) unmask() {
	for _, m := range s.masked {
		s.buf[m.i].Type, s.buf[m.i].Op = m.t, m.op
	}
	s.masked = s.masked[:0]
}

// prune drops what no later window needs: operations of each key that
// ended before from(key), unless they belong to a lease that is still held
// or may still be alive (not deleted by its release), or ended such a hold,
// or may have taken the key from a holder whose release a later window
// judges (see pending).
func (s *Stream) prune(from func(key string) int64) {
	keepOp := map[int64]bool{}
	keepCrash := map[int64]bool{}
	keep := func(l *leaseInfo) {
		for _, id := range l.ops {
			keepOp[id] = true
		}
		if l.ender != 0 {
			keepOp[l.ender] = true
		}
		if l.crash >= 0 {
			keepCrash[l.crash] = true
		}
	}
	var windows []history.Window
	worked := false
	faults := func() []history.Window {
		if !worked {
			windows, worked = history.FaultWindows(s.faults, forever), true
		}
		return windows
	}
	pending := s.pending(from, faults)
	for k, l := range s.leases {
		f := from(l.key.key)
		if l.open > 0 || l.held || l.last >= f || sat64(s.alive(l, faults), model.ExpirySlack) >= f && !l.gone {
			keep(l)
			continue
		}
		if since, ok := pending[l.key.key]; ok && l.disturbAt >= since {
			keep(l)
			continue
		}
		delete(s.leases, k)
	}
	peak, n := len(s.buf), 0
	for _, e := range s.buf {
		keep := false
		switch {
		case e.Type == history.Info:
			keep = e.Op != history.Crash || e.Time >= from("") || keepCrash[e.Index]
		default:
			o := s.ops[e.ID]
			keep = o == nil || !o.done || o.last >= from(e.Key) || keepOp[e.ID]
		}
		if keep {
			s.buf[n] = e
			n++
		}
	}
	clear(s.buf[n:])
	s.buf = s.buf[:n]
	for id, o := range s.ops {
		if o.done && o.last < from(o.key) && !keepOp[id] {
			delete(s.ops, id)
		}
	}
	// The next window fills the buffer about as far as this one did: keep
	// its room (growing it again, by copies into fresh pages, cost a tenth
	// of a full-speed run's CPU), and give back only a peak well above it.
	if cap(s.buf) > 4*peak+1024 {
		s.buf = append([]history.Event(nil), s.buf...)
	}
}

// pending returns, per key, the earliest call of an acquisition whose
// release a later window may judge: an acquire in flight, or a lease with
// an operation in flight, held, or released after from(key), that may
// still be alive (a lease that lapsed, or whose release returned after it
// could have run out, is no failed release). That window asks (package
// checker's failed-release) whether another lease's release deleted the
// key, or another acquire was granted it, since that call: the leases that
// did are kept while it may ask, however long ago they ended. A holder
// paused past its lease keeps nothing of the others so.
func (s *Stream) pending(from func(key string) int64, faults func() []history.Window) map[string]int64 {
	out := map[string]int64{}
	note := func(key string, t int64) {
		if v, ok := out[key]; !ok || t < v {
			out[key] = t
		}
	}
	for _, o := range s.open {
		if o.acquire {
			note(o.key, o.call)
		}
	}
	for _, l := range s.leases {
		if !l.acquired || l.nested {
			continue
		}
		alive := sat64(s.alive(l, faults), model.ExpirySlack)
		switch {
		case l.open > 0:
		case l.held && s.last <= alive:
		case !l.held && l.last >= from(l.key.key) && l.last <= alive:
		default:
			continue
		}
		note(l.key.key, l.since)
	}
	return out
}

// alive is the latest l may be alive: its until, and for each of its writes
// of unknown outcome what package checker's lease-claims allows it
// (checker.UnknownWriteEnd: a command held up by a paused server runs when
// that heals). faults returns the fault windows so far (one not healed
// yet lasts for ever).
func (s *Stream) alive(l *leaseInfo, faults func() []history.Window) int64 {
	until := l.until
	for _, w := range l.unknown {
		until = max(until, checker.UnknownWriteEnd(faults(), w.call, w.ret, w.ttl))
	}
	return until
}
