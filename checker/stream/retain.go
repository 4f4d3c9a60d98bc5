package stream

import (
	"sort"

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

func (s *Stream) unmask() {
	for _, m := range s.masked {
		s.buf[m.i].Type, s.buf[m.i].Op = m.t, m.op
	}
	s.masked = s.masked[:0]
}

// prune drops what no later window needs: operations of each key that
// ended before from(key), unless they belong to a lease that is still held
// or may still be alive (not deleted by its release), or ended such a hold.
func (s *Stream) prune(from func(key string) int64) {
	keepOp := map[int64]bool{}
	keepCrash := map[int64]bool{}
	for k, l := range s.leases {
		f := from(l.key.key)
		if l.open > 0 || l.held || l.last >= f || l.until >= f && !l.gone {
			for _, id := range l.ops {
				keepOp[id] = true
			}
			if l.ender != 0 {
				keepOp[l.ender] = true
			}
			if l.crash >= 0 {
				keepCrash[l.crash] = true
			}
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
