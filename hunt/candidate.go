package hunt

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/settings"
)

// Candidate is one run the hunt may try: a point of the Space and a seed.
type Candidate struct {
	Topology string   `json:"topology"`
	Faults   []string `json:"faults,omitempty"`
	// Values are the dimensions set off their base, as the hunt writes
	// them (durations may be multiples of the TTL: "0.5ttl").
	Values map[string]string `json:"values,omitempty"`
	Seed   int64             `json:"seed"`
}

// clone copies c deeply.
func (c Candidate) clone() Candidate {
	c.Faults = slices.Clone(c.Faults)
	c.Values = maps.Clone(c.Values)
	if c.Values == nil {
		c.Values = map[string]string{}
	}
	return c
}

// key identifies the candidate's run, seed aside: two candidates with one
// key try the same thing.
func (c Candidate) key() string {
	var b strings.Builder
	b.WriteString(c.Topology + "|" + strings.Join(c.Faults, ","))
	for _, k := range slices.Sorted(maps.Keys(c.Values)) {
		b.WriteString("|" + k + "=" + c.Values[k])
	}
	return b.String()
}

// cell is the candidate's topology and faults: where its margin is
// compared with others'.
func (c Candidate) cell() string {
	f := "no fault"
	if len(c.Faults) > 0 {
		f = strings.Join(c.Faults, "+")
	}
	return c.Topology + " / " + f
}

// normalize drops values that do not apply (a fault's setting without
// the fault, a value equal to its base) and orders the faults, so equal
// runs have equal keys.
func (sp *Space) normalize(c *Candidate) {
	sort.Strings(c.Faults)
	c.Faults = slices.Compact(c.Faults)
	apply := map[string]Dim{}
	for _, d := range sp.Dims(c) {
		apply[d.Name()] = d
	}
	for k, v := range c.Values {
		d, ok := apply[k]
		if !ok || v == d.Values[0] {
			delete(c.Values, k)
		}
	}
	// A value the runs refused (a TTL the lock cannot express, even the
	// base one) gives way to the first one still allowed.
	for _, d := range apply {
		if v := c.value(d); sp.isRefused(c.Topology, d.Name(), v) {
			if ok := sp.values(c.Topology, d)[0]; ok != d.Values[0] {
				c.Values[d.Name()] = ok
			}
		}
	}
}

// value is dimension d's value in c: its own or the base.
func (c *Candidate) value(d Dim) string {
	if v, ok := c.Values[d.Name()]; ok {
		return v
	}
	return d.Values[0]
}

// Settings are the candidate's settings as flag texts, by name: the fixed
// ones, then each dimension's value that is not "" (unset), resolved
// against the candidate's TTL.
func (sp *Space) Settings(c *Candidate) map[string]string {
	out := map[string]string{}
	for _, d := range sp.Dims(c) {
		if v := c.value(d); v != "" {
			out[d.Name()] = v
		}
	}
	maps.Copy(out, sp.Fixed)
	ttl := sp.ttl(out)
	for k, v := range out {
		out[k] = Resolve(v, ttl)
	}
	return out
}

// ttl is the TTL a candidate's relative durations are multiples of.
func (sp *Space) ttl(set map[string]string) time.Duration {
	if v, ok := set["ttl"]; ok {
		if d, err := time.ParseDuration(Resolve(v, time.Second)); err == nil && d > 0 {
			return d
		}
	}
	return locktorture.DefaultOptions().TTL
}

// Duration is how long the candidate runs: long enough for eight leases
// and three holds, and for a fault to come and heal three times, within
// [min, max]. A fixed duration wins.
func (sp *Space) Duration(c *Candidate, lo, hi time.Duration) time.Duration {
	set := sp.Settings(c)
	if v, ok := sp.Fixed["duration"]; ok {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	ttl := sp.ttl(set)
	d := 8 * ttl
	if v, ok := set["hold"]; ok {
		if s, err := (settings.Setting{Kind: settings.Range}).Parse(v); err == nil {
			d = max(d, 3*s.(settings.Span).Max+ttl)
		}
	}
	if len(c.Faults) > 0 {
		iv := locktorture.DefaultOptions().NemesisInterval
		if v, ok := set["nemesis-interval"]; ok {
			if x, err := time.ParseDuration(v); err == nil {
				iv = x
			}
		}
		d = max(d, 3*iv)
	}
	return max(min(max(d, lo), hi).Round(100*time.Millisecond), lo)
}

// Options are the run options of c, ready for locktorture.Run but for
// where it writes.
func (sp *Space) Options(c *Candidate, regs locktorture.Registries, dur time.Duration) (locktorture.Options, error) {
	o := locktorture.DefaultOptions()
	o.Registries = regs
	o.Lock, o.Topology, o.Faults, o.Seed, o.Duration = sp.Lock, c.Topology, slices.Clone(c.Faults), c.Seed, dur
	set := sp.Settings(c)
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if err := o.Set(k, set[k]); err != nil {
			return o, &locktorture.UsageError{Err: fmt.Errorf("candidate %s: %w", c.key(), err)}
		}
	}
	return o, nil
}

// Args is the candidate's torture run command line.
func (sp *Space) Args(c *Candidate, dur time.Duration) []string {
	args := []string{"torture", "run", "--lock", sp.Lock, "--topology", c.Topology}
	if len(c.Faults) > 0 {
		args = append(args, "--faults", strings.Join(c.Faults, ","))
	}
	set := sp.Settings(c)
	for _, k := range slices.Sorted(maps.Keys(set)) {
		args = append(args, "--"+k+"="+set[k])
	}
	return append(args, "--duration", dur.String(), "--seed", fmt.Sprint(c.Seed))
}
