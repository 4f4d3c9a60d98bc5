package locktorture

import (
	"github.com/locktorture/locktorture/history"
	runreport "github.com/locktorture/locktorture/report"
)

// OptionsFromRun rebuilds the Options of the run whose history header is r:
// the same lock (a lock program's exec: command line included), workload,
// topology, clients, keys, TTL, seed and every recorded setting, each set
// by name as its flag would be (report.ReplaySettings, which the replay
// command is made of too), against regs (so an outside entry's
// setting comes back too). The result runs on the local
// backend with no output folder (set OutDir and RunID to keep one). The
// header is untrusted input: a setting no declaration has, or a value that
// does not parse, is an error naming it, so a replay never silently differs
// from the run it replays.
func OptionsFromRun(r *history.RunInfo, regs Registries) (Options, error) {
	set, err := runreport.ReplaySettings(r)
	if err != nil {
		return Options{}, &UsageError{err}
	}
	o := DefaultOptions()
	o.Registries, o.OutDir = regs, ""
	for _, s := range set {
		if err := o.Set(s.Name, s.Value); err != nil {
			what := "run header"
			if s.Param {
				what = "run header param"
			}
			return Options{}, usage("%s %s=%q: %v", what, s.Name, s.Value, err)
		}
	}
	return o, o.Validate()
}
