package locktorture

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/summary"
)

// judgement is what stage 4 hands on: the report and its verdict, with
// what the live check saw of the run besides (the harness's stalls, the
// master switches, the fault windows).
type judgement struct {
	report  *checker.Report
	verdict checker.Verdict
	// stalls and longestMs count the harness's own stalls.
	stalls, longestMs int64
	masterSwitches    int64
	faults            []history.Window
	stoppedOnAnomaly  bool
}

// judge is stage 4: the live check judges the rest of the history, and the
// verdict is gated as the options say. A run that recorded no operation is
// an error, never a verdict: it is no evidence.
func judge(ctx context.Context, pl *plan, f *fleet, s *scheduled) (*judgement, error) {
	live := f.live
	rep, err := live.finish(context.WithoutCancel(ctx), f.header)
	if err != nil {
		return nil, err
	}
	if live.operations() == 0 {
		// A run whose clients never got an operation recorded (no
		// connection, interrupted at once) says nothing.
		return nil, fmt.Errorf("the run recorded no operation in %v (%w); see the harness messages",
			s.stats.Duration.Round(time.Millisecond), history.ErrNoOperations)
	}
	j := &judgement{report: rep, stalls: live.stalls, longestMs: live.longest / 1e6,
		faults: live.stream.Faults(), stoppedOnAnomaly: f.stopped.Load()}
	for _, e := range live.stream.Infos() {
		if e.Op == history.MasterSwitch {
			j.masterSwitches++
		}
	}
	rep.Notes = append(rep.Notes, faultNotes(s.stats.Faults, pl.opts.Duration)...)
	j.verdict = rep.Gate(pl.opts.FailOn)
	return j, nil
}

// faultNotes say why each fault that never took effect did not: it was
// never started (the run ended before its window came), or every start
// gave up or failed. The untested verdict says what was not tested; these
// say what to change.
func faultNotes(fs *summary.FaultStats, d time.Duration) []string {
	if fs == nil {
		return nil
	}
	names := make([]string, 0, len(fs.ByFault))
	for n := range fs.ByFault {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		c := fs.ByFault[n]
		switch {
		case c.TookEffect > 0:
		case c.Started == 0:
			out = append(out, fmt.Sprintf("fault %s was never started: its first window did not come within the run's %v (a longer --duration or a shorter --nemesis-interval)", n, d))
		case c.Unfinished > 0 && c.GaveUp+c.Failed == 0:
			out = append(out, fmt.Sprintf("fault %s was started and had not taken effect when the run ended (%v): it %s", n, d, c.WaitedFor))
		default:
			msg := fmt.Sprintf("fault %s was started %d times and never took effect: %d gave up, finding no target in time, %d failed", n, c.Started, c.GaveUp, c.Failed)
			if c.WaitedFor != "" {
				msg += "; the last: " + c.WaitedFor
			} else {
				msg += " (see the run's messages)"
			}
			out = append(out, msg)
		}
	}
	return out
}
