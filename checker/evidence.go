package checker

import (
	"strings"

	"github.com/locktorture/locktorture/history"
)

// Untested is the verdict of a history that found nothing wrong but put
// nothing to the test: no acquire succeeded, so no two holders could ever
// meet, or a fault the run asked for never took effect, so the lock was
// never shown surviving it. A CI gate must not read it as a pass.
const Untested Verdict = "untested"

// RequestedFaults are the faults a run's header says it asked for (its
// "faults" setting), in order; none for a fault-free run.
func RequestedFaults(run *history.RunInfo) []string {
	if run == nil {
		return nil
	}
	var out []string
	for _, f := range strings.Split(run.FaultsText(), ",") {
		if f = strings.TrimSpace(f); f != "" && f != "none" {
			out = append(out, f)
		}
	}
	return out
}
