package locktorture

import (
	"maps"
	"slices"
	"strings"

	"github.com/locktorture/locktorture/history"
)

// OptionsFromRun rebuilds the Options of the run whose history header is r:
// the same lock, workload, topology, clients, keys, TTL, seed and every
// recorded setting, each set by name as its flag would be, against regs (so
// an outside entry's setting comes back too). The result runs on the local
// backend with no output folder (set OutDir and RunID to keep one). The
// header is untrusted input: a setting no declaration has, or a value that
// does not parse, is an error naming it, so a replay never silently differs
// from the run it replays.
func OptionsFromRun(r *history.RunInfo, regs Registries) (Options, error) {
	if r == nil {
		return Options{}, usage("the history has no run header to rebuild the run from")
	}
	o := DefaultOptions()
	o.Registries, o.OutDir = regs, ""
	o.Lock, o.Clients, o.Keys, o.TTL, o.Seed = r.Lock, r.Clients, r.Keys, r.TTL(), r.Seed
	if r.Workload != "" {
		o.Workload = r.Workload
	}
	if r.Topology != "" {
		o.Topology = r.Topology
	}
	for _, k := range slices.Sorted(maps.Keys(r.Params)) {
		v := r.Params[k]
		// Headers written before the settings were declared once used
		// '_' in names and wrote "default" or nothing for unset values.
		if v == "" || v == "default" {
			continue
		}
		if err := o.Set(strings.ReplaceAll(k, "_", "-"), v); err != nil {
			return Options{}, usage("run header param %s=%q: %v", k, v, err)
		}
	}
	return o, o.Validate()
}
