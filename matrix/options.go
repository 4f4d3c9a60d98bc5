package matrix

import (
	"fmt"
	"sort"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/settings"
)

// checkParams refuses a key that names no setting a spec may set.
func checkParams(all *settings.Set, p Params) error {
	for _, k := range sortedKeys(p) {
		decl, ok := all.Lookup(k)
		if !ok {
			return fmt.Errorf("line %d: %w", p[k].Line, all.Unknown(k))
		}
		if k != decl.Name {
			return fmt.Errorf("line %d: %q is an older spelling of %q: write %s:", p[k].Line, k, decl.Name, decl.Name)
		}
		if !locktorture.SpecKey(decl) {
			return fmt.Errorf("line %d: setting %q belongs on the command line, not in a spec", p[k].Line, k)
		}
	}
	return nil
}

func sortedKeys(p Params) []string {
	out := make([]string, 0, len(p))
	for k := range p {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// options builds the cell's run options as the command line would: the
// defaults of a run, then the spec's defaults, then the cell's own values,
// each set by name through the one declaration of the settings.
func (c *Cell) options(def Params, regs locktorture.Registries) (locktorture.Options, error) {
	o := locktorture.DefaultOptions()
	o.Registries = regs
	o.Lock, o.OutDir = c.Lock, ""
	o.Faults = append([]string(nil), c.Faults...)
	for _, p := range []Params{def, c.Params} {
		for _, k := range sortedKeys(p) {
			if err := o.Set(k, p[k].Text); err != nil {
				return o, fmt.Errorf("line %d: %w", p[k].Line, err)
			}
		}
	}
	return o, nil
}

// Options are the options of one run of cell c: its resolved settings,
// the seed and the folder that receives the run.
func (c *Cell) Options(seed int64, outDir string) locktorture.Options {
	o := c.opts
	o.Seed, o.OutDir = seed, outDir
	o.Faults = append([]string(nil), c.opts.Faults...)
	o.Settings = maps(c.opts.Settings)
	return o
}

func maps(v settings.Values) settings.Values {
	if v == nil {
		return nil
	}
	out := make(settings.Values, len(v))
	for k, x := range v {
		out[k] = x
	}
	return out
}
