package checker

import (
	"fmt"

	"github.com/locktorture/locktorture/registry"
)

// Entry is one checker of the registry.
type Entry struct {
	Name    string
	Summary string
	// Always marks a checker of the lock itself, run on every history
	// whatever the workload; the others judge one workload's resource and
	// run when the workload (or the run's options) names them.
	Always bool
	// New builds the checker with the settings of one check.
	New func(MutexOptions) Checker
	// Kinds are the anomaly kinds it reports, each with the classes it
	// sorts them into (none for an unclassed kind): what a matrix cell may
	// expect, checked before the first run.
	Kinds map[Kind][]Class
	// Liveness names the kinds of Kinds that are liveness anomalies (a
	// lock that stalls, not one that lets two in): --fail-on safety
	// reports them without failing. Every other kind is safety.
	Liveness []Kind
}

// About implements registry.Entry.
func (e Entry) About() (string, string) { return e.Name, e.Summary }

// Check implements registry.Entry.
func (e Entry) Check() error {
	for _, k := range e.Liveness {
		if _, ok := e.Kinds[k]; !ok {
			return fmt.Errorf("liveness kind %q is not among the kinds it reports", k)
		}
	}
	return registry.NeedConstructor(e.New != nil)
}

// Registry holds the checkers a check can run, by name.
type Registry = registry.Registry[Entry]

// NewRegistry returns an empty checker registry.
func NewRegistry() *Registry { return registry.New[Entry]("checker") }

// Builtin returns a registry of the checkers this package implements;
// callers add their own with Register, the same call the built-ins go
// through.
func Builtin() *Registry {
	max := func(o MutexOptions) Option { return MaxAnomalies(o.MaxAnomalies) }
	return registry.Of("checker",
		Entry{Name: "mutual-exclusion", Always: true, Summary: "two holds of one key overlap: double-holder, classed within-lease or lease-outlived",
			Kinds: map[Kind][]Class{KindDoubleHolder: {ClassWithinLease, ClassLeaseOutlived}},
			New:   func(o MutexOptions) Checker { return MutualExclusion(max(o)) }},
		Entry{Name: "linearizable", Always: true, Kinds: map[Kind][]Class{KindNonlinearizable: nil}, Summary: "porcupine finds no legal order of the lock operations for a lease- and owner-aware mutex",
			New: func(o MutexOptions) Checker { return Linearizable(o.Linearizable, max(o)) }},
		Entry{Name: "foreign-release", Always: true, Kinds: map[Kind][]Class{KindForeignRelease: nil}, Summary: "a release deleted a lock another client held",
			New: func(o MutexOptions) Checker { return ForeignRelease(max(o)) }},
		Entry{Name: "liveness", Always: true, Kinds: map[Kind][]Class{KindStuckLock: nil, KindSpuriousFailure: nil},
			Liveness: []Kind{KindStuckLock, KindSpuriousFailure}, Summary: "stuck-lock: nobody could acquire a free key; spurious-failure: an acquire failed while the key was free",
			New: func(o MutexOptions) Checker { return Liveness(o.Liveness, max(o)) }},
		Entry{Name: "lease-claims", Always: true, Kinds: map[Kind][]Class{KindPhantomRelease: nil, KindPhantomRenewal: nil, KindFailedRelease: nil},
			Liveness: []Kind{KindFailedRelease}, Summary: "what a lock reports of its own key against its lease's timing: phantom-release, phantom-renewal (an expired lease deleted or extended), failed-release (a live one not deleted)",
			New: func(o MutexOptions) Checker { return LeaseClaims(max(o)) }},
		Entry{Name: "lost-update", Always: true, Kinds: map[Kind][]Class{KindLostUpdate: nil}, Summary: "the guarded counter lost an increment: two holders overlapped",
			New: func(o MutexOptions) Checker { return LostUpdate(max(o)) }},
		Entry{Name: "fence-regression", Always: true, Kinds: map[Kind][]Class{KindFenceRegression: nil}, Summary: "an acquire got a fencing token no higher than one handed out before it began",
			New: func(o MutexOptions) Checker { return FenceRegression(max(o)) }},
		Entry{Name: "reentrant", Kinds: map[Kind][]Class{KindReentryCount: {ClassDoubleCount, ClassLostCount}}, Summary: "the reentrant count an owner sees is impossible (reentry-count: double-count, lost-count)",
			New: func(o MutexOptions) Checker { return Reentrant(max(o)) }},
		Entry{Name: "stale-write", Kinds: map[Kind][]Class{KindStaleWrite: nil}, Summary: "a fenced resource accepted a write with an older token than one it had seen",
			New: func(o MutexOptions) Checker { return StaleWrite(max(o)) }},
		Entry{Name: "duplicate-work", Kinds: map[Kind][]Class{KindDuplicateWork: nil}, Summary: "a batch task was enqueued twice",
			New: func(o MutexOptions) Checker { return DuplicateWork(max(o)) }},
		Entry{Name: "oversell", Kinds: map[Kind][]Class{KindOversell: nil, KindDoubleBuy: nil}, Summary: "more units sold than stocked (oversell), a user who bought twice (double-buy)",
			New: func(o MutexOptions) Checker { return Oversell(max(o)) }},
	)
}

// Select composes the checkers that judge one history: every Always entry of
// r, in name order, then the named ones in the order given (a name already
// run as Always is not run twice).
func Select(r *Registry, names []string, o MutexOptions) (*Composite, error) {
	var cs []Checker
	picked := map[string]bool{}
	for _, e := range r.Entries() {
		if e.Always {
			cs = append(cs, e.New(o))
			picked[e.Name] = true
		}
	}
	for _, n := range names {
		if picked[n] {
			continue
		}
		e, err := r.Get(n)
		if err != nil {
			return nil, fmt.Errorf("select checkers: %w", err)
		}
		cs = append(cs, e.New(o))
		picked[n] = true
	}
	c := Compose(cs...)
	c.sev = severitiesOf(r)
	return c, nil
}
