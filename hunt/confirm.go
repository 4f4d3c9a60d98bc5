package hunt

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/shrink"
)

// reserve is the time the search leaves, once it ends, to confirm the
// trials that showed failures first (confirmNeeds each); at most half
// the budget.
func (h *hunter) reserve() time.Duration {
	var d time.Duration
	for _, t := range h.pending {
		d += h.confirmNeeds(t)
	}
	return min(h.opts.Budget/2, d)
}

// confirmNeeds is what confirming a trial takes: Reruns runs as long as
// its own, and a little for a smaller command.
func (h *hunter) confirmNeeds(t *Trial) time.Duration {
	run := h.sp.Duration(&t.Candidate, h.opts.MinRun, h.opts.MaxRun) + h.overhead(t.Candidate.Topology)
	return time.Duration(h.opts.Reruns)*run + 15*time.Second
}

// confirmAll confirms the pending trials' failures, those that matter
// most first, each given what it needs while the budget lasts and the
// last all that is left: a failure confirmed beats two half-confirmed.
func (h *hunter) confirmAll(ctx context.Context) {
	sort.SliceStable(h.pending, func(i, j int) bool { return bestRank(h.pending[i]) < bestRank(h.pending[j]) })
	for i, t := range h.pending {
		if ctx.Err() != nil {
			return
		}
		budget := time.Until(h.end)
		if i < len(h.pending)-1 {
			budget = min(budget, h.confirmNeeds(t))
		}
		h.confirm(ctx, t, budget)
	}
}

func bestRank(t *Trial) int {
	best := 1 << 30
	for _, s := range t.NewFailures {
		best = min(best, rank(s))
	}
	return best
}

// confirm settles the failures a trial showed first. The trial's own
// command is rerun on its seed first: a failure is found when Need of
// Reruns reruns show it again. Then, for those found and with what is
// left of budget, a smaller command: the settings taken back to their
// base where the failure shows without them (simplify), then torture
// shrink, and the smaller command's own reruns; it becomes a failure's
// smallest command only if it shows the failure as often.
func (h *hunter) confirm(ctx context.Context, t *Trial, budget time.Duration) {
	sigs := slices.Clone(t.NewFailures)
	sort.Slice(sigs, func(i, j int) bool { return rank(sigs[i]) < rank(sigs[j]) })
	fails := make([]*Failure, len(sigs))
	for i, sig := range sigs {
		fails[i] = h.fails[failKey{sig, false}]
		fails[i].Smallest = t.Command
	}
	end := time.Now().Add(budget)
	h.progress("rerunning " + string(sigs[0]))
	runs, shown := h.rerun(ctx, t.Dir, sigs, end)
	var found []*Failure
	for _, f := range fails {
		f.Reruns, f.Recurred = runs, shown[f.Signature]
		switch {
		case f.Recurred >= h.opts.Need:
			f.Status = StatusFound
			found = append(found, f)
		case runs < h.opts.Reruns && h.opts.Reruns-runs+f.Recurred >= h.opts.Need:
			f.Status = StatusUnconfirmed
		default:
			f.Status = StatusOnce
		}
	}
	if len(found) == 0 || time.Until(end) < 20*time.Second || ctx.Err() != nil {
		return
	}
	target := shrink.Target{Kind: found[0].Signature.Kind(), Class: found[0].Signature.Class()}
	h.progress("simplifying " + string(found[0].Signature))
	simpler := h.simplify(ctx, t, target, time.Until(end)/3)
	h.progress("shrinking " + string(found[0].Signature))
	dir := filepath.Join(h.opts.OutDir, "confirm", fmt.Sprintf("%03d-%s", t.N, idPart(string(found[0].Signature))))
	sres, err := shrink.Shrink(ctx, simpler, shrink.Options{Target: &target, Budget: max(time.Until(end)/2, 10*time.Second), OutDir: dir,
		Registries: h.opts.Registries, Logf: h.opts.Logf, Run: shrink.RunFunc(h.opts.Run)})
	switch {
	case err != nil:
		found[0].ShrinkError = oneLine(err.Error())
		return
	case !sres.Reproduced:
		found[0].ShrinkError = "the simplified run's command did not show it again on its rerun"
		return
	}
	h.progress("rerunning the smallest " + string(found[0].Signature))
	var fsigs []Signature
	for _, f := range found {
		fsigs = append(fsigs, f.Signature)
	}
	runs, shown = h.rerun(ctx, sres.SmallestDir, fsigs, end)
	for _, f := range found {
		if shown[f.Signature] >= h.opts.Need {
			f.Smallest, f.SmallestArgs, f.Reruns, f.Recurred = sres.Command(), sres.Smallest, runs, shown[f.Signature]
		}
	}
}

// rank orders failures for the shrink: safety before liveness, a double
// holder within the lease first.
func rank(s Signature) int {
	switch {
	case s.Kind() == checker.KindDoubleHolder:
		return 0
	case checker.SeverityOf(s.Kind()) == checker.SeveritySafety && !resourceKind(s.Kind()):
		return 1
	case checker.SeverityOf(s.Kind()) == checker.SeveritySafety:
		return 2
	}
	return 3
}

// rerun runs the command of the run in dir again on its seed, Reruns
// times (fewer once every failure is out of reach of Need, or at end),
// and counts for each failure the reruns that showed it.
func (h *hunter) rerun(ctx context.Context, dir string, sigs []Signature, end time.Time) (runs int, shown map[Signature]int) {
	shown = map[Signature]int{}
	o, err := optionsOf(dir, h.opts.Registries)
	if err != nil {
		return 0, shown
	}
	reachable := func() bool {
		for _, s := range sigs {
			if h.opts.Reruns-runs+shown[s] >= h.opts.Need {
				return true
			}
		}
		return false
	}
	o.Logf = h.opts.Logf
	for runs < h.opts.Reruns && ctx.Err() == nil && reachable() && time.Until(end) >= o.Duration+h.overhead(o.Topology) {
		seen := map[Signature]bool{}
		o.StopWhen = func(a checker.Anomaly) bool {
			seen[signatureOf(a)] = true
			for _, s := range sigs {
				if !seen[s] {
					return false
				}
			}
			return true
		}
		res, err := h.opts.Run(ctx, o)
		if err != nil || res.Interrupted {
			return runs, shown
		}
		for _, a := range res.Report.Anomalies {
			if !a.HarnessStall {
				seen[signatureOf(a)] = true
			}
		}
		runs++
		for _, s := range sigs {
			if seen[s] {
				shown[s]++
			}
		}
	}
	return runs, shown
}

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
