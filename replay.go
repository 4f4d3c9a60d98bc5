package locktorture

import (
	"maps"
	"slices"

	"github.com/locktorture/locktorture/history"
)

// OptionsFromRun rebuilds the Options of the run whose history header is r:
// the same lock (a lock program's exec: command line included), workload,
// topology, clients, keys, TTL, seed and every recorded setting, each set
// by name as its flag would be, against regs (so an outside entry's
// setting comes back too). The result runs on the local
// backend with no output folder (set OutDir and RunID to keep one). The
// header is untrusted input: a setting no declaration has, or a value that
// does not parse, is an error naming it, so a replay never silently differs
// from the run it replays.
func OptionsFromRun(r *history.RunInfo, regs Registries) (Options, error) {
	if r == nil {
		return Options{}, usage("the history has no run header to rebuild the run from")
	}
	lock, err := r.ReplayLock()
	if err != nil {
		return Options{}, &UsageError{err}
	}
	o := DefaultOptions()
	o.Registries, o.OutDir = regs, ""
	o.Lock, o.Clients, o.Keys, o.TTL, o.Seed = lock, r.Clients, r.Keys, r.TTL(), r.Seed
	if r.Workload != "" {
		o.Workload = r.Workload
	}
	if r.Topology != "" {
		o.Topology = r.Topology
	}
	params := r.Settings()
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if err := o.Set(k, params[k]); err != nil {
			return Options{}, usage("run header param %s=%q: %v", k, params[k], err)
		}
	}
	return o, o.Validate()
}
