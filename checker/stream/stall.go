package stream

import (
	"fmt"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// A stall of the harness itself (see history.WatchStalls) stops its
// clients as a client pause would, but nobody asked for it: a lease that
// ran out under a holder while the harness stood still is the harness's
// failure, not the lock's. The stream lists such an anomaly with a note
// and counts it apart (checker.Result.Stalled), so that it does not make the
// verdict, when all of these hold:
//
//   - a stall of at least half a TTL (a shorter one leaves a holder with
//     a short hold inside its lease) overlaps the TTL before the anomaly
//     or the anomaly itself;
//   - no fault the run injected was active then: an anomaly during a
//     fault is the fault's, stall or not;
//   - the anomaly is of a kind a holder outliving its lease can cause:
//     not a double holder within both leases, a history no lease mutex
//     allows, a fencing token going back, or what a lock reported of its
//     own key against the lease's timing (lease-claims), which no pause
//     explains: a stall only makes the times the harness records later.

// stallSpan is a stall of the harness long enough to matter.
type stallSpan struct{ from, to int64 }

// noteStall keeps e, a harness-stall event, if it is long enough to let a
// lease run out.
func (s *Stream) noteStall(e history.Event) {
	if e.Time-e.From >= s.ttl()/2 {
		s.stalls = append(s.stalls, stallSpan{e.From, e.Time})
	}
}

// stalledBy returns the stall that explains a, if one does.
func (s *Stream) stalledBy(a checker.Anomaly) (stallSpan, bool) {
	if len(s.stalls) == 0 || !pauseCanCause(a) {
		return stallSpan{}, false
	}
	from, to := a.StartNS-s.ttl(), a.EndNS
	for i := len(s.stalls) - 1; i >= 0; i-- {
		st := s.stalls[i]
		if st.from > to || st.to < from {
			continue
		}
		if history.ActiveAt(s.Faults(), from, to) {
			return stallSpan{}, false
		}
		return st, true
	}
	return stallSpan{}, false
}

// pauseCanCause reports whether a holder that went on past its lease can
// have caused a.
func pauseCanCause(a checker.Anomaly) bool {
	switch {
	case a.Kind == checker.KindDoubleHolder && a.Class == checker.ClassWithinLease, a.Kind == checker.KindNonlinearizable, a.Kind == checker.KindFenceRegression,
		a.Kind == checker.KindPhantomRelease, a.Kind == checker.KindPhantomRenewal, a.Kind == checker.KindFailedRelease:
		return false
	}
	return true
}

// stalled lists a, which st explains, apart from the verdict.
func (s *Stream) stalled(c *checker.Collector, a checker.Anomaly, st stallSpan) {
	a.Detail += fmt.Sprintf(" [harness-stall: the harness itself stood still from %s to %s with no fault injected, so a lease may have run out under it; not counted against the lock]",
		history.FormatTime(st.from), history.FormatTime(st.to))
	c.AddStalled(a)
	s.nStalled++
	if st.to-st.from > s.longest.to-s.longest.from {
		s.longest = st
	}
}

// stallNote is the report's note on the anomalies stalls explain.
func (s *Stream) stallNote() string {
	return fmt.Sprintf("harness-stall: %d anomalies fell in stalls of the harness itself (the longest %s, from %s), with no fault injected: listed, not counted against the lock; the harness was short of CPU or near its memory limit",
		s.nStalled, history.FormatDuration(s.longest.to-s.longest.from), history.FormatTime(s.longest.from))
}
