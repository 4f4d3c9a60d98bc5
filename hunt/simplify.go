package hunt

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/shrink"
)

// simplify takes a failing trial's settings back to their base values
// where the failure still shows without them, before torture shrink
// (which knows clients, keys, duration, faults and rates, not the
// hunt's other settings) makes the run smaller: all of them at once
// first, then each half, then one at a time, each kept when one run of
// it shows the target again. It returns the folder of the simplest run
// that showed it (the trial's own when none did) within budget.
func (h *hunter) simplify(ctx context.Context, t *Trial, target shrink.Target, budget time.Duration) string {
	end := time.Now().Add(budget)
	cur, dir := t.Candidate.clone(), t.Dir
	attempt := 0
	try := func(drop []string) bool {
		if len(drop) == 0 || ctx.Err() != nil {
			return false
		}
		c := cur.clone()
		for _, k := range drop {
			delete(c.Values, k)
		}
		dur := h.sp.Duration(&c, h.opts.MinRun, h.opts.MaxRun)
		if time.Until(end) < dur+h.overhead(c.Topology) {
			return false
		}
		o, err := h.sp.Options(&c, h.opts.Registries, dur)
		if err != nil {
			return false
		}
		attempt++
		o.OutDir, o.RunID = filepath.Join(h.opts.OutDir, "confirm"), fmt.Sprintf("%03d-simpler-%02d", t.N, attempt)
		o.Logf, o.StopWhen = h.opts.Logf, target.Matches
		next := filepath.Join(o.OutDir, o.RunID)
		res, err := h.opts.Run(ctx, o)
		if err == nil && !res.Interrupted && shows(res, target) {
			if dir != t.Dir {
				os.RemoveAll(dir)
			}
			cur, dir = c, next
			return true
		}
		os.RemoveAll(next)
		return false
	}
	keys := slices.Sorted(maps.Keys(cur.Values))
	if try(keys) {
		return dir
	}
	half := len(keys) / 2
	if try(keys[:half]) {
		keys = keys[half:]
	} else if try(keys[half:]) {
		keys = keys[:half]
	}
	for _, k := range keys {
		if _, ok := cur.Values[k]; ok && len(keys) > 1 {
			try([]string{k})
		}
	}
	return dir
}

// shows reports whether a run's report has an anomaly target matches
// that no stall of the harness explains.
func shows(res *locktorture.Result, target shrink.Target) bool {
	if res.Report == nil {
		return false
	}
	for _, a := range res.Report.Anomalies {
		if target.Matches(a) && !a.HarnessStall {
			return true
		}
	}
	return false
}
