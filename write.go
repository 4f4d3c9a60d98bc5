package locktorture

import (
	"context"
	"fmt"

	runreport "github.com/locktorture/locktorture/report"
	"github.com/locktorture/locktorture/summary"
)

// write is stage 5: summary.json for programs and report.html for people,
// in the run folder (nothing when the run has none).
func (r *run) write(ctx context.Context) error {
	res := r.res
	if res.Dir == "" {
		return nil
	}
	s := summary.Summary{RunID: res.RunID, Run: r.info, Verdict: res.Verdict, Interrupted: res.Interrupted,
		Stats: res.Stats, Faults: r.clients.live.stream.Faults()}
	if rep := res.Report; rep != nil {
		s.Counts, s.Classes, s.Anomalies, s.Checkers = rep.Count, rep.Classes, rep.Anomalies, rep.Results
		s.Stalled, s.Notes, s.Untested = rep.Stalled, rep.Notes, rep.Untested
	}
	if err := summary.Write(res.Dir, s); err != nil {
		return err
	}
	// The report reads the history back from the file.
	if _, err := runreport.Run(context.WithoutCancel(ctx), res.Dir); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
