// Tests of the seeded fault choice: uniform over the faults given, and
// unchanged for the windows of the faults kept when one is left out.

package nemesis

import (
	"math"
	"slices"
	"testing"
)

// named is a Fault that only has a name: pick reads nothing else.
type named struct {
	Fault
	name string
}

func (f named) Name() string { return f.name }

func faultsNamed(names ...string) []Fault {
	out := make([]Fault, len(names))
	for i, n := range names {
		out[i] = named{name: n}
	}
	return out
}

func TestPick(t *testing.T) {
	all := faultsNamed("pause-client", "crash-client", "lost-reply", "latency")
	const seeds, windows = 50, 200
	t.Run("uniform", func(t *testing.T) {
		got := map[string]int{}
		for seed := int64(1); seed <= seeds; seed++ {
			for n := range windows {
				got[pick(seed, n, all).Name()]++
			}
		}
		want := float64(seeds*windows) / float64(len(all))
		for _, f := range all {
			if c := float64(got[f.Name()]); math.Abs(c-want) > 0.05*want {
				t.Errorf("%s chosen %v times of %d, want about %v", f.Name(), c, seeds*windows, want)
			}
		}
	})
	t.Run("order does not matter", func(t *testing.T) {
		rev := slices.Clone(all)
		slices.Reverse(rev)
		for seed := int64(1); seed <= seeds; seed++ {
			for n := range windows {
				if a, b := pick(seed, n, all).Name(), pick(seed, n, rev).Name(); a != b {
					t.Fatalf("seed %d window %d: %s in one order, %s in the other", seed, n, a, b)
				}
			}
		}
	})
	t.Run("dropping a fault keeps the others' windows", func(t *testing.T) {
		for drop := range all {
			rest := slices.Delete(slices.Clone(all), drop, drop+1)
			moved := 0
			for seed := int64(1); seed <= seeds; seed++ {
				for n := range windows {
					was, now := pick(seed, n, all), pick(seed, n, rest)
					switch {
					case was.Name() != all[drop].Name() && now.Name() != was.Name():
						t.Fatalf("seed %d window %d: dropping %s moved %s to %s", seed, n, all[drop].Name(), was.Name(), now.Name())
					case was.Name() == all[drop].Name():
						moved++
					}
				}
			}
			if moved == 0 {
				t.Errorf("%s was never chosen, so dropping it shows nothing", all[drop].Name())
			}
		}
	})
}
