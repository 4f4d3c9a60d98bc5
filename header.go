package locktorture

import (
	"time"

	"github.com/locktorture/locktorture/history"
)

// The history's header: built once, from the plan, as stage 2 starts the
// recorder; read back for a replay (history.RunInfo.Replay) as the same
// settings by name.

// header is the run's history header; program is the name and version a
// lock program gave itself (empty for a lock in this process).
func (p *plan) header(program string) *history.RunInfo {
	o := p.opts
	return &history.RunInfo{ID: o.RunID, Lock: o.Lock, Program: program, Workload: o.Workload, Topology: o.Topology,
		Clients: o.Clients, Keys: o.Keys, TTLMillis: o.TTL.Milliseconds(), Seed: o.Seed,
		Started: time.Now().UTC(), Params: o.headerParams(p.settings), RenewsUnseen: p.lock.RenewsUnseen}
}

// OptionsFromRun rebuilds the Options of the run whose history header is r:
// the same lock (a lock program's exec: command line included), workload,
// topology, clients, keys, TTL, seed and every recorded setting, each set
// by name as its flag would be (history.RunInfo.Replay, which the replay
// command is made of too), against regs (so an outside entry's setting
// comes back too). The result runs on the local backend with no output
// folder (set OutDir and RunID to keep one). The header is untrusted input:
// a setting no declaration has, or a value that does not parse, is an error
// naming it, so a replay never silently differs from the run it replays.
func OptionsFromRun(r *history.RunInfo, regs Registries) (Options, error) {
	set, err := r.Replay()
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
