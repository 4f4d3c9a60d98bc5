package locktorture

import (
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/summary"
)

// Result is what a run produced.
type Result struct {
	RunID       string
	Dir         string // empty when OutDir was empty
	Verdict     checker.Verdict
	Report      *checker.Report
	Stats       Stats
	Interrupted bool
	// StoppedOnAnomaly: the run ended early at its first safety anomaly
	// (Options.StopOnAnomaly), or at the first Options.StopWhen accepted.
	StoppedOnAnomaly bool
}

// Stats summarise the operations of a run (summary.json "stats").
type Stats = summary.Stats

// FaultStats count what the run's fault starts found (summary.json "faults").
type FaultStats = summary.FaultStats

// newResult assembles the Result of a run in dir from what stages 3 and 4
// handed on: it is made here and nowhere else.
func newResult(pl *plan, dir string, s *scheduled, j *judgement) *Result {
	st := s.stats
	st.Stalls, st.LongestStallMs, st.MasterSwitches = j.stalls, j.longestMs, j.masterSwitches
	return &Result{RunID: pl.opts.RunID, Dir: dir, Verdict: j.verdict, Report: j.report, Stats: st,
		Interrupted: s.interrupted, StoppedOnAnomaly: j.stoppedOnAnomaly}
}
