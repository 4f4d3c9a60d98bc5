package locktorture

import (
	"context"
	"fmt"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/report"
	"github.com/locktorture/locktorture/summary"
)

// write is stage 5: summary.json for programs and report.html for people,
// in the run folder (nothing when the run has none), from the header stage
// 2 wrote, the result, and the fault windows stage 4 judged.
func write(ctx context.Context, header *history.RunInfo, res *Result, faults []history.Window) error {
	if res.Dir == "" {
		return nil
	}
	s := summary.Summary{RunID: res.RunID, Run: header, Verdict: res.Verdict, Interrupted: res.Interrupted,
		Stats: res.Stats, Faults: faults}
	if rep := res.Report; rep != nil {
		s.Counts, s.Classes, s.Anomalies, s.Checkers = rep.Count, rep.Classes, rep.Anomalies, rep.Results
		s.Stalled, s.Notes, s.Untested = rep.Stalled, rep.Notes, rep.Untested
	}
	if err := summary.Write(res.Dir, s); err != nil {
		return err
	}
	// The report reads the history back from the file.
	if _, err := report.Run(context.WithoutCancel(ctx), res.Dir); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
