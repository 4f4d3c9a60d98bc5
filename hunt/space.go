package hunt

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/settings"
)

// Dim is one setting the hunt varies: its declaration and the values it
// tries, the first the base value ("" leaves the setting unset).
type Dim struct {
	Setting settings.Setting
	Values  []string
}

// Name is the setting's name.
func (d Dim) Name() string { return d.Setting.Name }

// Space is every run the hunt may try for one lock, as the declarations
// give it: the topologies the lock serves, the faults that act on each, the
// run's own searched settings (the load) and the settings of each fault.
// Nothing in it is a list of cases: a fault, topology, workload or setting
// registered anywhere is in it the day it is registered.
type Space struct {
	Lock       string
	Topologies []string
	// Faults lists, per topology, the faults whose entry acts on it.
	Faults map[string][]string
	// Load are the run's own settings that declare values to try, and the
	// workload (every registered one).
	Load []Dim
	// FaultDims are, per fault, the settings its entry declares.
	FaultDims map[string][]Dim
	// Fixed are settings the user holds at one value: never varied.
	Fixed map[string]string

	refused map[string]int // topology|dim=value -> refusals, see refuse
	allowed map[string]bool
}

// SpaceOptions narrow the space.
type SpaceOptions struct {
	// Topologies, Faults: only these (empty: every one that applies;
	// Faults ["none"]: no fault at all).
	Topologies []string
	Faults     []string
	// Fixed settings, by name, as flag texts.
	Fixed map[string]string
}

// withFaults are run settings that only matter when a run injects a fault:
// a candidate without faults leaves them unset, so its command stays short.
var withFaults = []string{"nemesis-interval", "nemesis-duration", "target", "trigger", "warmup"}

// NewSpace derives the space of lock from regs.
func NewSpace(regs locktorture.Registries, lock string, o SpaceOptions) (*Space, error) {
	regs.Fill()
	all, err := regs.Settings()
	if err != nil {
		return nil, err
	}
	sp := &Space{Lock: lock, Faults: map[string][]string{}, FaultDims: map[string][]Dim{}, Fixed: map[string]string{},
		refused: map[string]int{}, allowed: map[string]bool{}}
	for k, v := range o.Fixed {
		decl, ok := all.Lookup(k)
		if !ok {
			return nil, all.Unknown(k)
		}
		if _, err := decl.Parse(v); err != nil {
			return nil, fmt.Errorf("--fix %s=%s: %w", k, v, err)
		}
		sp.Fixed[decl.Name] = v
	}
	// The default topology first: the sweep starts where a run would.
	tops := regs.Topologies.Names()
	def := locktorture.DefaultOptions().Topology
	if i := slices.Index(tops, def); i > 0 {
		tops = append([]string{def}, slices.Delete(tops, i, i+1)...)
	}
	if len(o.Topologies) > 0 {
		for _, t := range o.Topologies {
			if _, err := regs.Topologies.Get(t); err != nil {
				return nil, err
			}
		}
		tops = o.Topologies
	}
	faults := regs.Faults.Entries()
	switch {
	case len(o.Faults) == 1 && o.Faults[0] == "none":
		faults = nil
	case len(o.Faults) > 0:
		if faults, err = regs.Faults.Lookup(o.Faults); err != nil {
			return nil, err
		}
	}
	sort.Slice(faults, func(i, j int) bool { return faults[i].Name < faults[j].Name })
	for _, t := range tops {
		sp.Topologies = append(sp.Topologies, t)
		for _, f := range faults {
			if f.Serves(t) == nil {
				sp.Faults[t] = append(sp.Faults[t], f.Name)
			}
		}
	}
	sp.Load = loadDims(all, regs)
	for _, f := range faults {
		for _, s := range f.Settings {
			decl, _ := all.Lookup(s.Name)
			if vals := entryValues(decl); len(vals) > 0 {
				sp.FaultDims[f.Name] = append(sp.FaultDims[f.Name], Dim{Setting: decl, Values: vals})
			}
		}
	}
	sp.dropFixed()
	return sp, nil
}

// loadDims are the run's own settings that declare values to try, the
// workload's every registered entry, in declaration order.
func loadDims(all *settings.Set, regs locktorture.Registries) []Dim {
	var out []Dim
	for _, s := range all.All() {
		switch {
		case s.Owner != "run" || s.NoSearch:
		case s.Name == "workload":
			names := regs.Workloads.Names()
			base := locktorture.DefaultOptions().Workload
			vals := []string{base}
			for _, n := range names {
				if n != base {
					vals = append(vals, n)
				}
			}
			out = append(out, Dim{Setting: s, Values: vals})
		case len(s.Search) > 0:
			out = append(out, Dim{Setting: s, Values: slices.Clone(s.Search)})
		}
	}
	return out
}

// dropFixed takes the fixed settings out of the dimensions: they keep
// their one value.
func (sp *Space) dropFixed() {
	keep := func(ds []Dim) []Dim {
		return slices.DeleteFunc(ds, func(d Dim) bool { _, fixed := sp.Fixed[d.Name()]; return fixed })
	}
	sp.Load = keep(sp.Load)
	for f, ds := range sp.FaultDims {
		sp.FaultDims[f] = keep(ds)
	}
}

// Dims are the dimensions candidate c's settings come from: the load, the
// fault-only run settings when it injects a fault, and its faults' own.
func (sp *Space) Dims(c *Candidate) []Dim {
	var out []Dim
	for _, d := range sp.Load {
		if len(c.Faults) == 0 && slices.Contains(withFaults, d.Name()) {
			continue
		}
		if !sp.dimApplies(c.Topology, d) {
			continue
		}
		out = append(out, d)
	}
	seen := map[string]bool{}
	for _, f := range c.Faults {
		for _, d := range sp.FaultDims[f] {
			if !seen[d.Name()] {
				seen[d.Name()] = true
				out = append(out, d)
			}
		}
	}
	return out
}

// dimApplies: the multi-master node count means nothing on a topology of
// one master; the plan says so by refusing it, which refuse learns, but a
// setting the plan ignores would only lengthen the command.
func (sp *Space) dimApplies(topology string, d Dim) bool {
	return d.Name() != "nodes" || topology == "redlock"
}

// values are the values of d still allowed on topology.
func (sp *Space) values(topology string, d Dim) []string {
	out := make([]string, 0, len(d.Values))
	for _, v := range d.Values {
		if !sp.isRefused(topology, d.Name(), v) {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return d.Values[:1]
	}
	return out
}

// FaultsOn lists the faults still applicable on topology.
func (sp *Space) FaultsOn(topology string) []string {
	return slices.DeleteFunc(slices.Clone(sp.Faults[topology]), func(f string) bool {
		return sp.isRefused(topology, "fault", f)
	})
}

// LiveTopologies lists the topologies not refused.
func (sp *Space) LiveTopologies() []string {
	return slices.DeleteFunc(slices.Clone(sp.Topologies), func(t string) bool { return sp.isRefused(t, "topology", t) })
}

// refusedAfter is how many refusals, with no acceptance, take a value out
// of a topology's space: two, so that one refusal for another reason (a
// combination the plan refuses) does not.
const refusedAfter = 2

// refusedOutright takes a value out at once: a topology the lock says it
// does not serve, a fault not available there.
const refusedOutright = 1 << 20

// topologyRefusedAfter is the refusals (counted refusedAfter-1 each) that
// take a topology out when no refusal named what was wrong.
const topologyRefusedAfter = 3 * (refusedAfter - 1)

func refuseKey(topology, dim, value string) string { return topology + "|" + dim + "=" + value }

func (sp *Space) isRefused(topology, dim, value string) bool {
	if g := refuseKey("*", dim, value); sp.refused[g] >= refusedAfter && !sp.allowed[refuseKey(topology, dim, value)] {
		return true
	}
	k := refuseKey(topology, dim, value)
	limit := refusedAfter
	if dim == "topology" {
		limit = max(refusedAfter, topologyRefusedAfter)
	}
	return !sp.allowed[k] && sp.refused[k] >= limit
}

// learn records what a run's start said of its candidate: a topology the
// lock does not serve or a fault not available is out at once. A refused
// candidate (a usage error) counts against the values of the settings
// its error names as flags (--ttl: "cannot be expressed"), the base ones
// among them, else against each of its non-base values and its topology.
// An accepted one clears them all.
func (sp *Space) learn(c *Candidate, err error, kind refusal) {
	switch kind {
	case refusedTopology:
		sp.refused[refuseKey(c.Topology, "topology", c.Topology)] = refusedOutright
	case refusedFault:
		for _, f := range c.Faults {
			if strings.Contains(err.Error(), "nemesis "+f+" ") {
				sp.refused[refuseKey(c.Topology, "fault", f)] = refusedOutright
			}
		}
	case refusedOther:
		var named []Dim
		for _, d := range sp.Dims(c) {
			if flagNamed(err.Error(), d.Name()) {
				named = append(named, d)
			}
		}
		switch len(named) {
		case 0:
		case 1:
			// What a lock cannot express (a TTL, a share) it cannot on
			// any topology.
			sp.refused[refuseKey("*", named[0].Name(), c.value(named[0]))]++
			return
		default:
			return // two settings that do not go together: neither is to blame alone
		}
		for name, v := range c.Values {
			sp.refused[refuseKey(c.Topology, name, v)]++
		}
		// A topology is dropped later than a value: it takes a third
		// refusal with nothing to blame.
		sp.refused[refuseKey(c.Topology, "topology", c.Topology)] += refusedAfter - 1
	case tookNoLock:
		// A workload that never calls the lock (a sale in one Lua
		// script) tests nothing of it, wherever it runs.
		if w, ok := c.Values["workload"]; ok {
			sp.refused[refuseKey("*", "workload", w)] = refusedOutright
		}
	case accepted:
		sp.allowed[refuseKey(c.Topology, "topology", c.Topology)] = true
		for _, f := range c.Faults {
			sp.allowed[refuseKey(c.Topology, "fault", f)] = true
		}
		for _, d := range sp.Dims(c) {
			sp.allowed[refuseKey(c.Topology, d.Name(), c.value(d))] = true
		}
	}
}

// flagNamed reports whether an error names the setting as a flag, as the
// plan's and the lock programs' errors do ("--share 4: want 1..2 (at
// most --clients)").
func flagNamed(msg, name string) bool {
	for _, sep := range []string{" ", "=", ")", ":", ","} {
		if strings.Contains(msg, "--"+name+sep) {
			return true
		}
	}
	return strings.HasSuffix(msg, "--"+name)
}

type refusal int

const (
	accepted refusal = iota
	refusedTopology
	refusedFault
	refusedOther
	tookNoLock
)

// Size counts the candidates of the space (one seed each), for the report:
// per topology, every fault set of at most two faults times every value
// combination of its dimensions.
func (sp *Space) Size() float64 {
	total := 0.0
	for _, t := range sp.Topologies {
		fs := sp.Faults[t]
		sets := [][]string{nil}
		for i, a := range fs {
			sets = append(sets, []string{a})
			for _, b := range fs[i+1:] {
				sets = append(sets, []string{a, b})
			}
		}
		for _, set := range sets {
			c := &Candidate{Topology: t, Faults: set}
			n := 1.0
			for _, d := range sp.Dims(c) {
				n *= float64(len(d.Values))
			}
			total += n
		}
	}
	return total
}
