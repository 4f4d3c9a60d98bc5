package locktorture

import (
	"sort"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/workloads"
)

// workloadSpec is one --workload: how its clients behave and which checkers,
// beyond the lock checkers every workload gets, judge its guarded resource.
type workloadSpec struct {
	Summary  string
	New      func(r *workloads.Runner, opts Options) (workloads.Workload, error)
	Checkers func() []checker.Checker
}

// workloadSpecs lists the workloads; a new workload adds an entry here.
func workloadSpecs() map[string]workloadSpec {
	return map[string]workloadSpec{
		"mutex": {
			Summary: "acquire, read-modify-write a counter kept outside Redis, release",
			New: func(r *workloads.Runner, o Options) (workloads.Workload, error) {
				return workloads.NewMutex(r, shape(o))
			},
		},
		"reentrant": {
			Summary: "the mutex workload with the holder taking the lock again inside its hold, to a depth of 1..3 (seed 000's foo() calling bar())",
			New: func(_ *workloads.Runner, o Options) (workloads.Workload, error) {
				return workloads.NewReentrant(workloads.ReentrantOptions{MutexOptions: shape(o)})
			},
			Checkers: func() []checker.Checker { return []checker.Checker{checker.Reentrant()} },
		},
		"fenced": {
			Summary: "read and write a store that refuses writes with an older fencing token than it has seen (use --lock fenced)",
			New: func(_ *workloads.Runner, o Options) (workloads.Workload, error) {
				return workloads.NewFenced(shape(o), true)
			},
			Checkers: func() []checker.Checker { return []checker.Checker{checker.StaleWrite()} },
		},
		"fenced-unchecked": {
			Summary: "the fenced workload with a store that ignores the tokens: stale writes get through and are counted",
			New: func(_ *workloads.Runner, o Options) (workloads.Workload, error) {
				return workloads.NewFenced(shape(o), false)
			},
			Checkers: func() []checker.Checker { return []checker.Checker{checker.StaleWrite()} },
		},
		"batch": {
			Summary: "schedulers pull pending tasks under the lock, mark them queued and enqueue them (seed 000's 场景): tasks queued twice",
			New: func(_ *workloads.Runner, o Options) (workloads.Workload, error) {
				return workloads.NewBatch(workloads.BatchOptions{MutexOptions: shape(o)})
			},
			Checkers: func() []checker.Checker { return []checker.Checker{checker.DuplicateWork()} },
		},
		"stock": {
			Summary: "flash sale under the lock: GET stock, SISMEMBER user, DECR, SADD (seed 000's 秒杀扣库存): oversell, double-buy",
			New: func(_ *workloads.Runner, o Options) (workloads.Workload, error) {
				return workloads.NewStock(workloads.StockOptions{MutexOptions: shape(o)})
			},
			Checkers: func() []checker.Checker { return []checker.Checker{checker.Oversell()} },
		},
		"stock-lua": {
			Summary: "the same sale as one atomic Lua script and no lock at all (seed 000's 不是银弹)",
			New: func(_ *workloads.Runner, o Options) (workloads.Workload, error) {
				return workloads.NewStock(workloads.StockOptions{MutexOptions: shape(o), Lua: true})
			},
			Checkers: func() []checker.Checker { return []checker.Checker{checker.Oversell()} },
		},
	}
}

// shape is the hold every workload shares: --keys, --hold, --overrun,
// --abandon, --think.
func shape(o Options) workloads.MutexOptions {
	return workloads.MutexOptions{Keys: o.Keys, HoldMin: o.HoldMin, HoldMax: o.HoldMax, TTL: o.TTL,
		Overrun: o.Overrun, Abandon: o.Abandon, Think: o.Think}
}

// WorkloadNames lists the workloads, sorted.
func WorkloadNames() []string {
	var out []string
	for n := range workloadSpecs() {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// WorkloadSummaries maps each workload to its one-line description.
func WorkloadSummaries() map[string]string {
	out := map[string]string{}
	for n, w := range workloadSpecs() {
		out[n] = w.Summary
	}
	return out
}

// checkersFor returns every checker that judges a history of workload name.
func checkersFor(name string, lin checker.LinearizableOptions) *checker.Composite {
	base := checker.ForMutex(checker.MutexOptions{Linearizable: lin}).Checkers()
	// Any lock may hand out fencing tokens, whatever the workload.
	base = append(base, checker.FenceRegression())
	if spec, ok := workloadSpecs()[name]; ok && spec.Checkers != nil {
		base = append(base, spec.Checkers()...)
	}
	return checker.Compose(base...)
}
