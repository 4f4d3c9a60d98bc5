package history

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// ReplaySetting is one setting of a recorded run, as the text its flag
// takes.
type ReplaySetting struct {
	Name, Value string
	// Param: the setting comes from the header's params, not from one of
	// its own fields (lock, workload, topology, clients, keys, ttl, seed).
	Param bool
}

// Replay reads the header back as the settings that run its run again, in
// the order a replay command gives them: the header's own fields, then
// every recorded param by name. It is the one reading of a header for a
// replay, beside the header's writing: the report's replay command gives
// it as flags, locktorture.OptionsFromRun sets it on Options. An error
// says why the header cannot be replayed.
func (r *RunInfo) Replay() ([]ReplaySetting, error) {
	if r == nil {
		return nil, errors.New("the history has no run header to rebuild the run from")
	}
	lock, err := r.ReplayLock()
	if err != nil {
		return nil, err
	}
	set := []ReplaySetting{{Name: "lock", Value: lock}}
	add := func(name, v string) { set = append(set, ReplaySetting{Name: name, Value: v}) }
	if r.Workload != "" {
		add("workload", r.Workload)
	}
	if r.Topology != "" {
		add("topology", r.Topology)
	}
	add("clients", fmt.Sprint(r.Clients))
	add("keys", fmt.Sprint(r.Keys))
	add("ttl", r.TTL().String())
	add("seed", fmt.Sprint(r.Seed))
	params := r.Settings()
	for _, k := range slices.Sorted(maps.Keys(params)) {
		set = append(set, ReplaySetting{Name: k, Value: params[k], Param: true})
	}
	return set, nil
}
