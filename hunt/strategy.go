package hunt

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
)

// Strategy chooses the hunt's next run from what the runs so far showed.
type Strategy interface {
	// Next is the next candidate and how it was made ("sweep",
	// "mutation of #3", "random"); the parent trial's number, or -1.
	Next() (c Candidate, how string, parent int)
	// Observe tells the strategy what a trial of its showed.
	Observe(t *Trial)
}

// The strategies torture hunt --strategy names.
const (
	StrategyFeedback = "feedback"
	StrategyRandom   = "random"
)

// Strategies lists the names NewStrategy takes.
var Strategies = []string{StrategyFeedback, StrategyRandom}

// NewStrategy makes the strategy named over sp, its choices seeded by seed.
func NewStrategy(name string, sp *Space, seed int64) (Strategy, error) {
	rng := rand.New(rand.NewSource(seed))
	switch name {
	case StrategyFeedback, "":
		explore := &random{sp: sp, rng: rand.New(rand.NewSource(seed ^ 0x6578706c6f7265))}
		return &feedback{sp: sp, rng: rng, explore: explore, tried: map[string]bool{}, best: map[string]float64{}, requeued: map[string]int{}}, nil
	case StrategyRandom:
		return &random{sp: sp, rng: rng}, nil
	}
	return nil, fmt.Errorf("strategy %q: want %s or %s", name, StrategyFeedback, StrategyRandom)
}

// random samples the space uniformly, with no sweep and no feedback but
// what the plan refuses: the baseline the feedback strategy is measured
// against, on the same space and the same budget.
type random struct {
	sp  *Space
	rng *rand.Rand
}

func (r *random) Next() (Candidate, string, int) {
	tops := r.sp.LiveTopologies()
	c := Candidate{Topology: tops[r.rng.Intn(len(tops))], Values: map[string]string{}}
	fs := r.sp.FaultsOn(c.Topology)
	n := min(r.rng.Intn(3), len(fs))
	for _, i := range r.rng.Perm(len(fs))[:n] {
		c.Faults = append(c.Faults, fs[i])
	}
	for _, d := range r.sp.Dims(&c) {
		vals := r.sp.values(c.Topology, d)
		c.Values[d.Name()] = vals[r.rng.Intn(len(vals))]
	}
	c.Seed = r.rng.Int63n(1 << 31)
	r.sp.normalize(&c)
	return c, "random", -1
}

func (r *random) Observe(*Trial) {}

// feedback is the grey-box search, after AFL and Mallory. Its runs take
// turns: a sweep of every fault at its defaults on every topology (then
// of every load setting alone) covers first what a hand-written fault
// table would; a draw from the whole space, as the random strategy makes,
// explores what no feedback points at yet (on the museum, hunted blind, a
// sparse draw near the base missed every bug a uniform one found: a
// load-driven bug takes several settings off at once); and a mutation of
// its corpus (each run that reached coverage no run had, a failure, or
// came closer to a double holder within the lease than any run of its
// cell) exploits what came close, giving more runs to those that brought
// more and to those that came closest.
type feedback struct {
	sp      *Space
	rng     *rand.Rand
	explore *random
	sweep   []Candidate
	swept   bool
	corpus  []*entry
	tried   map[string]bool
	// best is the smallest margin seen per cell, in ms.
	best     map[string]float64
	requeued map[string]int
	turns    int
}

// entry is a run of the corpus and the runs it has been given.
type entry struct {
	trial  int
	c      Candidate
	energy float64
	picked int
}

func (f *feedback) Next() (Candidate, string, int) {
	if !f.swept {
		f.sweep, f.swept = f.sweepList(), true
	}
	f.turns++
	// Turns go round: a sweep run while the sweep lasts, a run drawn from
	// the whole space (exploration: what no feedback points at yet), a
	// mutation of the corpus (exploitation: what came close).
	switch f.turns % 3 {
	case 1:
		for len(f.sweep) > 0 {
			c := f.sweep[0]
			f.sweep = f.sweep[1:]
			if f.live(&c) && !f.tried[c.key()] {
				f.tried[c.key()] = true
				return c, "sweep", -1
			}
		}
	case 2:
		if c, _, p := f.explore.Next(); !f.tried[c.key()] {
			f.tried[c.key()] = true
			return c, "exploration", p
		}
	}
	if len(f.corpus) == 0 {
		c, _, p := f.explore.Next()
		f.tried[c.key()] = true
		return c, "exploration", p
	}
	for range 32 {
		p := f.pick()
		c, how := f.mutate(p)
		if !f.tried[c.key()] || f.rng.Intn(8) == 0 {
			f.tried[c.key()] = true
			return c, how, p.trial
		}
	}
	p := f.pick()
	c := p.c.clone()
	c.Seed = f.rng.Int63n(1 << 31)
	return c, fmt.Sprintf("reseed of #%d", p.trial), p.trial
}

// live reports whether c is still in the space (its topology and faults
// not refused since the sweep was listed).
func (f *feedback) live(c *Candidate) bool {
	if !slices.Contains(f.sp.LiveTopologies(), c.Topology) {
		return false
	}
	for _, x := range c.Faults {
		if !slices.Contains(f.sp.FaultsOn(c.Topology), x) {
			return false
		}
	}
	return true
}

func (f *feedback) base(topology string) Candidate {
	return Candidate{Topology: topology, Values: map[string]string{}, Seed: f.rng.Int63n(1 << 31)}
}

// sweepList is the sweep: the base run on every topology; then every
// fault alone at its defaults, the topologies taking turns; then every
// value of every load setting alone (on the first topology, without
// faults), the settings taking turns.
func (f *feedback) sweepList() []Candidate {
	var out []Candidate
	for _, t := range f.sp.Topologies {
		out = append(out, f.base(t))
	}
	var faults [][]Candidate
	for _, t := range f.sp.Topologies {
		var row []Candidate
		for _, x := range f.sp.Faults[t] {
			c := f.base(t)
			c.Faults = []string{x}
			row = append(row, c)
		}
		faults = append(faults, row)
	}
	out = append(out, turns(faults)...)
	first := f.sp.Topologies[0]
	var loads [][]Candidate
	for _, d := range f.sp.Dims(&Candidate{Topology: first}) {
		var row []Candidate
		for _, v := range d.Values[1:] {
			c := f.base(first)
			c.Values[d.Name()] = v
			f.sp.normalize(&c)
			row = append(row, c)
		}
		loads = append(loads, row)
	}
	return append(out, turns(loads)...)
}

// turns lists the rows' first items, then their second items, and so on.
func turns(rows [][]Candidate) []Candidate {
	var out []Candidate
	for i := 0; ; i++ {
		n := len(out)
		for _, r := range rows {
			if i < len(r) {
				out = append(out, r[i])
			}
		}
		if len(out) == n {
			return out
		}
	}
}

// pick chooses a corpus entry with probability in proportion to its
// energy, which halves each time it is picked: every entry gets its turn,
// those that brought more get more.
func (f *feedback) pick() *entry {
	total := 0.0
	for _, e := range f.corpus {
		total += e.energy / float64(1+e.picked)
	}
	x := f.rng.Float64() * total
	for _, e := range f.corpus {
		x -= e.energy / float64(1+e.picked)
		if x <= 0 {
			e.picked++
			return e
		}
	}
	e := f.corpus[len(f.corpus)-1]
	e.picked++
	return e
}

// mutate makes a child of p: one to three changes (a setting to another
// of its values, a fault added, dropped or swapped, another topology, a
// new seed), and now and then the settings of a second corpus entry
// crossed in.
func (f *feedback) mutate(p *entry) (Candidate, string) {
	c := p.c.clone()
	how := fmt.Sprintf("mutation of #%d", p.trial)
	if len(f.corpus) > 1 && f.rng.Intn(4) == 0 {
		o := f.corpus[f.rng.Intn(len(f.corpus))]
		if o != p {
			f.cross(&c, o.c)
			how = fmt.Sprintf("cross of #%d and #%d", p.trial, o.trial)
		}
	}
	for n := 1 + f.rng.Intn(3); n > 0; n-- {
		f.change(&c)
	}
	c.Seed = f.rng.Int63n(1 << 31)
	f.sp.normalize(&c)
	return c, how
}

// cross takes each of o's settings into c with even odds, and o's faults
// where c's topology has them and room is left.
func (f *feedback) cross(c *Candidate, o Candidate) {
	for k, v := range o.Values {
		if f.rng.Intn(2) == 0 {
			c.Values[k] = v
		}
	}
	on := f.sp.FaultsOn(c.Topology)
	for _, x := range o.Faults {
		if len(c.Faults) < 2 && slices.Contains(on, x) && !slices.Contains(c.Faults, x) {
			c.Faults = append(c.Faults, x)
		}
	}
}

// change applies one mutation to c.
func (f *feedback) change(c *Candidate) {
	on := f.sp.FaultsOn(c.Topology)
	switch r := f.rng.Intn(10); {
	case r < 5: // a setting
		dims := f.sp.Dims(c)
		if len(dims) == 0 {
			return
		}
		d := dims[f.rng.Intn(len(dims))]
		vals := f.sp.values(c.Topology, d)
		c.Values[d.Name()] = vals[f.rng.Intn(len(vals))]
	case r < 7 && len(c.Faults) < 2 && len(on) > 0: // a fault more
		c.Faults = append(c.Faults, on[f.rng.Intn(len(on))])
	case r < 8 && len(c.Faults) > 0: // a fault fewer
		c.Faults = slices.Delete(c.Faults, 0, 1)
		f.rng.Shuffle(len(c.Faults), func(i, j int) { c.Faults[i], c.Faults[j] = c.Faults[j], c.Faults[i] })
	case r < 9 && len(c.Faults) > 0 && len(on) > 0: // another fault
		c.Faults[f.rng.Intn(len(c.Faults))] = on[f.rng.Intn(len(on))]
	default: // another topology, keeping the faults that act there
		tops := f.sp.LiveTopologies()
		c.Topology = tops[f.rng.Intn(len(tops))]
		on = f.sp.FaultsOn(c.Topology)
		c.Faults = slices.DeleteFunc(c.Faults, func(x string) bool { return !slices.Contains(on, x) })
	}
}

// Observe admits a trial to the corpus when it reached coverage no trial
// had, a failure, or a smaller margin than its cell had seen, with energy
// for each.
func (f *feedback) Observe(t *Trial) {
	if t.Refused && t.How == "sweep" && f.requeued[t.Candidate.key()] < 2 {
		// Refused for a value it can give up (a TTL the lock cannot
		// express): back to the front, to run with the value allowed.
		f.requeued[t.Candidate.key()]++
		delete(f.tried, t.Candidate.key())
		f.sweep = append([]Candidate{t.Candidate}, f.sweep...)
	}
	if t.Refused || t.Error != "" {
		return
	}
	energy := 0.0
	if n := len(t.New); n > 0 {
		energy += 1 + math.Min(float64(n), 8)
	}
	if len(t.NewFailures) > 0 {
		energy += 4
	}
	if m := t.Obs.MarginMs; m != nil {
		cell := t.Candidate.cell()
		if best, seen := f.best[cell]; !seen || *m < best {
			f.best[cell] = *m
			energy += 1 + closeness(*m)
		}
	}
	if energy > 0 {
		f.corpus = append(f.corpus, &entry{trial: t.N, c: t.Candidate.clone(), energy: energy})
	}
}

// closeness scores a margin: 0 for a second or more, up to 5 for a grant
// within a millisecond of a lease in force (or inside it).
func closeness(ms float64) float64 {
	if ms <= 1 {
		return 5
	}
	return math.Max(0, math.Min(5, math.Log2(1000/ms)/2))
}
