package workloads

import (
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/registry"
	"github.com/locktorture/locktorture/settings"
)

// Entry is one workload of the registry: how its clients behave, and which
// checkers, beyond the lock checkers every history gets, judge its guarded
// resource.
type Entry struct {
	Name    string
	Summary string
	// New builds the workload for one run; shape carries the hold every
	// workload shares (--keys, --hold, --overrun, --abandon, --think).
	New func(r *Runner, shape MutexOptions) (Workload, error)
	// Checkers names the checker entries (checker.Registry) that judge
	// the workload's resource.
	Checkers []string
	// Ops lists the operation names the workload records beyond the lock's
	// own, so a strict reader of its histories knows them.
	Ops []history.Op
	// Settings are the knobs this workload reads beyond the run's own
	// (from MutexOptions.Settings): each is a flag and a spec key.
	Settings []settings.Setting
}

// About implements registry.Entry.
func (e Entry) About() (string, string) { return e.Name, e.Summary }

// Declared lists the settings the entry reads beyond the run's own.
func (e Entry) Declared() []settings.Setting { return e.Settings }

// Check implements registry.Entry.
func (e Entry) Check() error { return registry.NeedConstructor(e.New != nil) }

// Registry holds the workloads a run can drive, by name.
type Registry = registry.Registry[Entry]

// NewRegistry returns an empty workload registry.
func NewRegistry() *Registry { return registry.New[Entry]("workload") }

// Builtin returns a registry of the workloads this package implements;
// callers add their own with Register, the same call the built-ins go
// through.
func Builtin() *Registry {
	rw := []history.Op{history.Read, history.Write}
	return registry.Of("workload",
		Entry{Name: "mutex", Ops: rw,
			Summary: "acquire, read-modify-write a counter kept outside Redis, release",
			New:     func(r *Runner, o MutexOptions) (Workload, error) { return NewMutex(r, o) }},
		Entry{Name: "reentrant", Checkers: []string{"reentrant"}, Ops: append(rw, history.NestedAcquire, history.NestedRelease),
			Summary: "the mutex workload with the holder taking the lock again inside its hold, to a depth of 1..3 (seed 000's foo() calling bar())",
			New: func(_ *Runner, o MutexOptions) (Workload, error) {
				return NewReentrant(ReentrantOptions{MutexOptions: o})
			}},
		Entry{Name: "fenced", Checkers: []string{"stale-write"}, Ops: rw,
			Summary: "read and write a store that refuses writes with an older fencing token than it has seen (use --lock fenced)",
			New:     func(_ *Runner, o MutexOptions) (Workload, error) { return NewFenced(o, true) }},
		Entry{Name: "fenced-unchecked", Checkers: []string{"stale-write"}, Ops: rw,
			Summary: "the fenced workload with a store that ignores the tokens: stale writes get through and are counted",
			New:     func(_ *Runner, o MutexOptions) (Workload, error) { return NewFenced(o, false) }},
		Entry{Name: "batch", Checkers: []string{"duplicate-work"}, Ops: []history.Op{history.Enqueue},
			Summary: "schedulers pull pending tasks under the lock, mark them queued and enqueue them (seed 000's 场景): tasks queued twice",
			New: func(_ *Runner, o MutexOptions) (Workload, error) {
				return NewBatch(BatchOptions{MutexOptions: o})
			}},
		Entry{Name: "stock", Checkers: []string{"oversell"}, Ops: []history.Op{history.Restock, history.Buy},
			Summary: "flash sale under the lock: GET stock, SISMEMBER user, DECR, SADD (seed 000's 秒杀扣库存): oversell, double-buy",
			New: func(_ *Runner, o MutexOptions) (Workload, error) {
				return NewStock(StockOptions{MutexOptions: o})
			}},
		Entry{Name: "stock-lua", Checkers: []string{"oversell"}, Ops: []history.Op{history.Restock, history.Buy},
			Summary: "the same sale as one atomic Lua script and no lock at all (seed 000's 不是银弹)",
			New: func(_ *Runner, o MutexOptions) (Workload, error) {
				return NewStock(StockOptions{MutexOptions: o, Lua: true})
			}},
	)
}
