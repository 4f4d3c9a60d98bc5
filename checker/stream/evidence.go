package stream

import (
	"fmt"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// What a run put to the test: a verdict of valid needs the lock taken and
// every fault the run asked for to have taken effect (checker.Untested).
// Only a stream sees the whole run, so only a stream settles it.

// evidence counts what a history shows was really exercised: the lock
// taken, and each fault's windows. A verdict of valid needs both. A
// workload that never takes the lock (stock-lua: one atomic script, the
// control of the flash sale) needs some operation of its own to succeed.
type evidence struct {
	tried, acquired int64 // acquires invoked, and granted
	ok              int64 // operations of any kind that succeeded
	took            map[string]int
	// asked are the faults the header says the run asked for.
	asked []string
}

func (ev *evidence) add(e history.Event) {
	switch {
	case e.Run != nil:
		ev.asked = checker.RequestedFaults(e.Run)
	case e.Type == history.Invoke && e.Op == history.Acquire:
		ev.tried++
	case e.Type == history.OK:
		ev.ok++
		if e.Op == history.Acquire {
			ev.acquired++
		}
	case e.Type == history.Info && e.Op == history.FaultStart:
		if ev.took == nil {
			ev.took = map[string]int{}
		}
		ev.took[e.Fault]++
	case e.Type == history.Info && e.Op == history.FaultHeal && e.Error != "":
		// The injection never took effect: its start proves nothing.
		if ev.took[e.Fault] > 0 {
			ev.took[e.Fault]--
		}
	}
}

// untested says in words what the history did not test; empty when it
// tested what it was asked to.
func (ev *evidence) untested() []string {
	var out []string
	switch {
	case ev.tried > 0 && ev.acquired == 0:
		out = append(out, "no acquire succeeded: mutual exclusion was never put to the test")
	case ev.ok == 0:
		out = append(out, "no operation succeeded: nothing was put to the test")
	}
	for _, f := range ev.asked {
		if ev.took[f] == 0 {
			out = append(out, fmt.Sprintf("fault %s never took effect: the lock was not shown surviving it", f))
		}
	}
	return out
}

// requireEvidence records what was not tested in r and turns a valid
// verdict into checker.Untested when anything was not. An invalid verdict stands:
// an anomaly found is evidence whatever else was not tested.
func requireEvidence(r *checker.Report, ev *evidence) {
	r.Untested = ev.untested()
	if len(r.Untested) > 0 && r.Verdict == checker.Valid {
		r.Verdict = checker.Untested
	}
}
