package matrix

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Shard is the K-th of N disjoint parts of a matrix's runs (--shard K/N),
// so that N machines (a CI job matrix, a Kubernetes Indexed Job) run one
// matrix together and `torture matrix merge` puts it back together. The
// zero Shard is the whole matrix.
type Shard struct {
	K int `json:"k"`
	N int `json:"n"`
}

// maxShards bounds N: past it a typo, not a fleet.
const maxShards = 10000

// ParseShard reads "K/N" with 1 <= K <= N.
func ParseShard(text string) (Shard, error) {
	k, n, found := strings.Cut(strings.TrimSpace(text), "/")
	ki, err1 := strconv.Atoi(k)
	ni, err2 := strconv.Atoi(n)
	switch {
	case !found || err1 != nil || err2 != nil:
		return Shard{}, fmt.Errorf("shard %q: want K/N, like 2/4 (the second of four parts)", text)
	case ni < 1 || ni > maxShards:
		return Shard{}, fmt.Errorf("shard %q: N must be 1..%d", text, maxShards)
	case ki < 1 || ki > ni:
		return Shard{}, fmt.Errorf("shard %q: K must be 1..%d (shards count from 1)", text, ni)
	}
	return Shard{K: ki, N: ni}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.K, s.N) }

// PlanCell is one selected cell of a matrix with every seed it runs, over
// all shards: what a matrix promised to run, recorded in matrix.json so
// that merge can tell a missing run from one that was never planned.
type PlanCell struct {
	Name  string  `json:"name"`
	Seeds []int64 `json:"seeds"`
}

// plannedRun is one (cell, seed) run of the plan and what it is expected
// to cost.
type plannedRun struct {
	cell int // index into the selected cells
	seed int64
	cost time.Duration
}

// runOverhead is what a run costs beyond its duration: servers started
// and stopped, the check finished, the report written.
const runOverhead = time.Second

// estimate is the expected wall time of one run of cell c: a control runs
// its whole duration; a breaking run stops at its expected anomaly (unless
// full), guessed at a third of the way in. Only the ratios between runs
// matter to the balance, so a rough guess serves.
func estimate(c *Cell, def Params, full bool) time.Duration {
	o := c.Options(0, "").WithDefaults()
	d := o.Duration
	if c.Expect.Breaks != nil && !full {
		d /= 3
	}
	if o.Topology != "single" {
		d += 2 * runOverhead // more servers to start, Sentinels to settle
	}
	return d + runOverhead
}

// plan lists every run of the selected cells in order: cells as the spec
// has them, each with its seeds.
func plan(spec *Spec, cells []Cell, opts Options) ([]plannedRun, []PlanCell) {
	var runs []plannedRun
	var pc []PlanCell
	for i := range cells {
		c := &cells[i]
		cost := estimate(c, spec.Defaults, opts.FullRuns)
		seeds := spec.SeedsFor(c, opts.Seeds)
		pc = append(pc, PlanCell{Name: c.Name, Seeds: append([]int64{}, seeds...)})
		for _, s := range seeds {
			runs = append(runs, plannedRun{cell: i, seed: s, cost: cost})
		}
	}
	return runs, pc
}

// pick returns the runs of shard s, in plan order. The runs are dealt
// longest first, each to the shard with the least expected time so far
// (ties to the lower shard), so the shards end at about the same time
// and every machine computes the same parts from the same plan.
func (s Shard) pick(runs []plannedRun) []plannedRun {
	if s.N <= 1 {
		return runs
	}
	order := make([]int, len(runs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return runs[order[a]].cost > runs[order[b]].cost })
	load := make([]time.Duration, s.N)
	mine := make([]bool, len(runs))
	for _, i := range order {
		least := 0
		for k := 1; k < s.N; k++ {
			if load[k] < load[least] {
				least = k
			}
		}
		load[least] += runs[i].cost
		mine[i] = least == s.K-1
	}
	var out []plannedRun
	for i, r := range runs {
		if mine[i] {
			out = append(out, r)
		}
	}
	return out
}
