package checker

import (
	"fmt"
	"strings"

	"github.com/locktorture/locktorture/history"
)

// Untested is the verdict of a history that found nothing wrong but put
// nothing to the test: no acquire succeeded, so no two holders could ever
// meet, or a fault the run asked for never took effect, so the lock was
// never shown surviving it. A CI gate must not read it as a pass.
const Untested Verdict = "untested"

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
		ev.asked = RequestedFaults(e.Run)
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

// RequestedFaults are the faults a run's header says it asked for (its
// "nemesis" setting), in order; none for a fault-free run.
func RequestedFaults(run *history.RunInfo) []string {
	if run == nil {
		return nil
	}
	var out []string
	for _, f := range strings.Split(run.Params["nemesis"], ",") {
		if f = strings.TrimSpace(f); f != "" && f != "none" {
			out = append(out, f)
		}
	}
	return out
}

// requireEvidence records what was not tested in r and turns a valid
// verdict into Untested when anything was not. An invalid verdict stands:
// an anomaly found is evidence whatever else was not tested.
func (r *Report) requireEvidence(ev *evidence) {
	r.Untested = ev.untested()
	if len(r.Untested) > 0 && r.Verdict == Valid {
		r.Verdict = Untested
	}
}
