// Package checker decides, from a recorded history alone, whether a lock kept
// its promises. Each checker looks for one family of anomalies (two holders at
// once, a release of someone else's lock, a lock nobody can take, a release or
// renewal whose reported outcome the lease's timing rules out, a lost update
// of the guarded resource, a history no lease mutex could produce) and
// returns a typed Result; Compose runs several and folds their verdicts into
// one Report, which is what a run's summary.json holds.
//
// Checkers never trust the lock's own view of itself: they reason from the
// invocation and completion times on the run's one clock, so a lock that lies
// about its own state is caught by what its clients did.
//
// A long run is judged window by window as it is written, by package
// checker/stream, through the Windowed API of this package (Window,
// Judge); the model of a lock key and the linearizability search are in
// package checker/model. A checker from another module needs this package
// only.
package checker

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/locktorture/locktorture/history"
)

// Checker examines a history for one family of anomalies.
type Checker interface {
	// Name identifies the checker in reports ("mutual-exclusion", ...).
	Name() string
	// Check examines h. It never fails: a checker that cannot decide (it ran
	// out of time, ctx ended) returns an Unknown verdict with Error set.
	Check(ctx context.Context, h *history.History) Result
}

// Verdict is the outcome of a check.
type Verdict string

const (
	// Valid: the checker looked at everything and found no anomaly.
	Valid Verdict = "valid"
	// Invalid: at least one anomaly was found.
	Invalid Verdict = "invalid"
	// Unknown: the checker could not decide, usually because it ran out of
	// time; Result.Error says why.
	Unknown Verdict = "unknown"
)

// Kind names a family of anomalies. The names are stable: they appear in
// summary.json and in --expect flags.
type Kind string

const (
	// KindDoubleHolder: two clients believed they held the same key at once.
	KindDoubleHolder Kind = "double-holder"
	// KindNonlinearizable: no order of the lock operations that respects
	// their real times is legal for a lease mutex.
	KindNonlinearizable Kind = "nonlinearizable"
	// KindForeignRelease: a release deleted a lock another client held.
	KindForeignRelease Kind = "foreign-release"
	// KindStuckLock: nobody could acquire a key for a long time although
	// clients waited, nobody held it and no fault was active.
	KindStuckLock Kind = "stuck-lock"
	// KindSpuriousFailure: an acquire failed although no lease could have
	// been alive for a good while during it (an orphaned lock).
	KindSpuriousFailure Kind = "spurious-failure"
	// KindLostUpdate: a write to the guarded resource overwrote an update
	// it never saw.
	KindLostUpdate Kind = "lost-update"
	// KindStaleWrite: a fenced resource accepted a write carrying an older
	// fencing token than one it had already seen.
	KindStaleWrite Kind = "stale-write"
	// KindDuplicateWork: a batch task was done twice.
	KindDuplicateWork Kind = "duplicate-work"
	// KindOversell: more units were sold than there were.
	KindOversell Kind = "oversell"
	// KindFenceRegression: fencing tokens did not strictly increase in
	// acquire order.
	KindFenceRegression Kind = "fence-regression"
)

// Class refines a double holder by whose fault it was.
type Class string

const (
	// ClassWithinLease: at some instant both holders' leases were valid, so
	// the lock itself handed out a lease it had already given away.
	ClassWithinLease Class = "within-lease"
	// ClassLeaseOutlived: one holder went on after its lease could have run
	// out; no lock can prevent that, only fencing or stopping in time can.
	ClassLeaseOutlived Class = "lease-outlived"
)

// Anomaly is one violation, with enough context to find it in the history
// and the timeline.
type Anomaly struct {
	Kind Kind `json:"kind"`
	// Severity is SeverityOf(Kind), spelt out for tools that read the
	// summary without this package.
	Severity  Severity `json:"severity"`
	Class     Class    `json:"class,omitempty"`
	Clients   []int    `json:"clients"`
	Processes []int    `json:"processes"`
	Keys      []string `json:"keys"`
	Leases    []string `json:"leases"`
	// StartNS and EndNS bound the anomaly on the history's clock.
	StartNS int64 `json:"start_ns"`
	EndNS   int64 `json:"end_ns"`
	// Detail says what happened in one sentence, for people.
	Detail string `json:"detail"`
	// AfterSwitch marks an anomaly that started shortly after a master
	// switch (see MarkAfterSwitch).
	AfterSwitch bool `json:"after_switch,omitempty"`
	// SharedObject, on a double holder of a run whose clients share lock
	// objects (--share K), says whether its two holders were clients of
	// one lock object (one group of K: threads of one process, which a
	// library may let overlap by design) or of two (a lock that let in a
	// client of another object: across processes, the lock failed). Nil
	// in a run without shared objects.
	SharedObject *bool `json:"shared_object,omitempty"`
	// HarnessStall marks an anomaly that a stall of the harness itself
	// explains (see package checker/stream): Detail says which. It is listed, and counted
	// in Stalled rather than Count: it is not the lock's failure.
	HarnessStall bool `json:"harness_stall,omitempty"`

	stuck *stuckSpan // a stuck-lock's stretch, for a stream to join its parts
	// owner is when the anomaly is settled, if later than StartNS: the
	// return of the failed acquire a spurious failure judges, of the
	// release or refresh a lease-claims anomaly judges. A stream
	// reports it from the window whose own part holds that time, where
	// every operation called before it has completed but for those a
	// window hides, which the rules read as still running (an acquire
	// in flight would look like a free lock).
	owner int64
	// joinOnly marks a stuck-lock a window does not own, which a stream
	// joins to the stretch an earlier window reported, or else drops.
	joinOnly bool
}

// Result is what one checker found.
type Result struct {
	Checker string  `json:"checker"`
	Verdict Verdict `json:"verdict"`
	// Anomalies lists what was found, at most MaxAnomalies of each kind, so
	// that a lock broken ten thousand times over still gives a readable
	// report; Count has the totals.
	Anomalies []Anomaly    `json:"anomalies"`
	Count     map[Kind]int `json:"count"`
	// Classes counts by kind and class what Count counts (see ClassCounts).
	Classes ClassCounts `json:"classes,omitempty"`
	// Stalled counts the anomalies a stall of the harness explains; they
	// do not make the verdict.
	Stalled map[Kind]int     `json:"stalled,omitempty"`
	Stats   map[string]int64 `json:"stats,omitempty"`
	// Error says why the verdict is Unknown.
	Error string `json:"error,omitempty"`
}

// Report is the composed outcome of several checkers.
type Report struct {
	// Verdict is Invalid if any checker found an anomaly, else Unknown if
	// any could not decide, else Valid.
	Verdict   Verdict      `json:"verdict"`
	Results   []Result     `json:"results"`
	Anomalies []Anomaly    `json:"anomalies"`
	Count     map[Kind]int `json:"count"`
	// Classes counts every anomaly that has a class, by kind and class,
	// over the whole history like Count (not only those listed).
	Classes ClassCounts `json:"classes,omitempty"`
	// Stalled counts the anomalies a stall of the harness explains, apart.
	Stalled map[Kind]int `json:"stalled,omitempty"`
	// Severity counts the anomalies by severity (from Count, so the totals
	// are exact even where the list is capped).
	Severity map[Severity]int `json:"severity"`
	// Notes say what a reader of the verdict should know about how it was
	// reached: a checker whose memory was not bounded, anomalies a stall of
	// the harness itself explains.
	Notes []string `json:"notes,omitempty"`
	// Untested says what the history did not put to the test (no acquire
	// succeeded, a fault never took effect); a verdict that would have been
	// valid is then Untested. Set by a stream (package checker/stream), which sees the whole run.
	Untested []string `json:"untested,omitempty"`
}

// DefaultMaxAnomalies is how many anomalies of one kind a result lists when
// no MaxAnomalies option says otherwise.
const DefaultMaxAnomalies = 50

// Option adjusts what every checker has in common.
type Option func(*settings)

type settings struct {
	maxAnomalies int
}

// MaxAnomalies caps the anomalies listed per kind (the count stays exact).
// Zero keeps the default (50); a negative n lists them all.
func MaxAnomalies(n int) Option {
	return func(s *settings) {
		if n != 0 {
			s.maxAnomalies = n
		}
	}
}

func newSettings(opts []Option) settings {
	s := settings{maxAnomalies: DefaultMaxAnomalies}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	return s
}

// collector builds a Result, capping the listed anomalies per kind.
type collector struct {
	res Result
	max int
}

func newCollector(name string, s settings) *collector {
	return &collector{
		res: Result{Checker: name, Verdict: Valid, Anomalies: []Anomaly{}, Count: map[Kind]int{}, Classes: ClassCounts{}, Stats: map[string]int64{}},
		max: s.maxAnomalies,
	}
}

func (c *collector) add(a Anomaly) {
	a.Severity = SeverityOf(a.Kind)
	c.res.Count[a.Kind]++
	c.res.Classes.add(a.Kind, a.Class, 1)
	if c.max >= 0 && c.res.Count[a.Kind] > c.max {
		return
	}
	c.res.Anomalies = append(c.res.Anomalies, filled(a))
}

// filled is a with empty lists where it has none, for the JSON readers.
func filled(a Anomaly) Anomaly {
	if a.Clients == nil {
		a.Clients = []int{}
	}
	if a.Processes == nil {
		a.Processes = []int{}
	}
	if a.Keys == nil {
		a.Keys = []string{}
	}
	if a.Leases == nil {
		a.Leases = []string{}
	}
	return a
}

// addStalled lists a, which a stall of the harness explains, without
// counting it against the verdict.
func (c *collector) addStalled(a Anomaly) {
	a.HarnessStall = true
	if c.res.Stalled == nil {
		c.res.Stalled = map[Kind]int{}
	}
	c.res.Stalled[a.Kind]++
	if c.max >= 0 && c.res.Stalled[a.Kind] > c.max {
		return
	}
	a.Severity = SeverityOf(a.Kind)
	c.res.Anomalies = append(c.res.Anomalies, filled(a))
}

func (c *collector) stat(name string, v int64) { c.res.Stats[name] = v }

// result settles the verdict: any anomaly makes it Invalid, even when part
// of the check could not finish, because what was found stays found.
func (c *collector) result() Result {
	r := c.res
	switch {
	case len(r.Count) > 0:
		r.Verdict = Invalid
	case r.Error != "":
		r.Verdict = Unknown
	default:
		r.Verdict = Valid
	}
	return r
}

func (c *collector) fail(err string) {
	if c.res.Error == "" {
		c.res.Error = err
	} else {
		c.res.Error += "; " + err
	}
}

// indexed is implemented by the built-in checkers: they share one analysis
// of the history (holds, leases, per-key operations), so a composed check
// pairs invocations and completions once rather than once per checker.
type indexed interface {
	checkIndex(ctx context.Context, ix *index) Result
}

// Composite runs several checkers on the same history and folds their
// results into one verdict.
type Composite struct {
	checkers []Checker
	// sev are the severities the entries declare, when the composite
	// came from a registry (Select); nil: the built-in ones.
	sev severities
}

// Compose returns a checker that runs all of cs. Nil entries are skipped.
func Compose(cs ...Checker) *Composite {
	c := &Composite{}
	for _, x := range cs {
		if x != nil {
			c.checkers = append(c.checkers, x)
		}
	}
	return c
}

// Checkers returns the composed checkers in the order they report.
func (c *Composite) Checkers() []Checker { return append([]Checker(nil), c.checkers...) }

// Name lists the composed checkers.
func (c *Composite) Name() string {
	names := make([]string, len(c.checkers))
	for i, x := range c.checkers {
		names[i] = x.Name()
	}
	return "compose(" + strings.Join(names, ",") + ")"
}

// Check runs every composed checker and merges their results into one: the
// composed verdict, every anomaly, summed counts, and stats prefixed with the
// name of the checker that produced them.
func (c *Composite) Check(ctx context.Context, h *history.History) Result {
	rep := c.Report(ctx, h)
	out := Result{Checker: c.Name(), Verdict: rep.Verdict, Anomalies: rep.Anomalies, Count: rep.Count, Classes: rep.Classes, Stats: map[string]int64{}}
	var errs []string
	for _, r := range rep.Results {
		for k, v := range r.Stats {
			out.Stats[r.Checker+"."+k] = v
		}
		if r.Error != "" {
			errs = append(errs, r.Checker+": "+r.Error)
		}
	}
	out.Error = strings.Join(errs, "; ")
	return out
}

// Report runs every composed checker, concurrently (the linearizability
// search may take long; the others should not wait for it), and folds the
// results in the order the checkers were given.
func (c *Composite) Report(ctx context.Context, h *history.History) Report {
	var ix *index
	for _, x := range c.checkers {
		if _, ok := x.(indexed); ok {
			ix = newIndex(h)
			break
		}
	}
	return c.reportIndexed(ctx, h, ix)
}

// reportIndexed is Report on an index of h already built (nil if no checker
// reads one), so that a caller that needs the index too builds it once.
func (c *Composite) reportIndexed(ctx context.Context, h *history.History, ix *index) Report {
	results := make([]Result, len(c.checkers))
	var wg sync.WaitGroup
	for i, x := range c.checkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if in, ok := x.(indexed); ok {
				results[i] = in.checkIndex(ctx, ix)
			} else {
				results[i] = x.Check(ctx, h)
			}
		}()
	}
	wg.Wait()
	rep := Fold(results...)
	if c.sev != nil {
		c.sev.apply(&rep)
	}
	return rep
}

// Fold composes results computed separately: the verdict is Invalid if any
// is, else Unknown if any is, else Valid.
func Fold(results ...Result) Report {
	rep := Report{Verdict: Valid, Results: results, Anomalies: []Anomaly{}, Count: map[Kind]int{}, Classes: ClassCounts{},
		Severity: map[Severity]int{}}
	unknown := false
	for _, r := range results {
		switch r.Verdict {
		case Invalid:
			rep.Verdict = Invalid
		case Unknown:
			unknown = true
		}
		rep.Anomalies = append(rep.Anomalies, r.Anomalies...)
		for k, n := range r.Count {
			rep.Count[k] += n
			rep.Severity[SeverityOf(k)] += n
		}
		if r.Classes == nil {
			// A result built without a collector: its list is all there
			// is to count classes from.
			for _, a := range r.Anomalies {
				if !a.HarnessStall {
					rep.Classes.add(a.Kind, a.Class, 1)
				}
			}
		}
		for k, cs := range r.Classes {
			for c, n := range cs {
				rep.Classes.add(k, c, n)
			}
		}
		for k, n := range r.Stalled {
			if rep.Stalled == nil {
				rep.Stalled = map[Kind]int{}
			}
			rep.Stalled[k] += n
		}
		for i := range r.Anomalies {
			if a := &r.Anomalies[i]; a.Severity == "" {
				a.Severity = SeverityOf(a.Kind) // from a checker outside this package
			}
		}
	}
	if rep.Verdict != Invalid && unknown {
		rep.Verdict = Unknown
	}
	return rep
}

// MutexOptions configure the default checkers of the mutex workload.
type MutexOptions struct {
	Linearizable LinearizableOptions
	Liveness     LivenessOptions
	// MaxAnomalies caps the anomalies listed per kind and checker; 0 means
	// the default (50), negative means all.
	MaxAnomalies int
}

// ForMutex returns the checkers every lock history is judged by (the
// Always entries of Builtin): mutual exclusion, linearizability against a
// lease mutex, foreign releases, liveness, what the lock claims of its own
// key (lease-claims), lost updates of the guarded counter and fencing-token
// order.
func ForMutex(o MutexOptions) *Composite {
	c, _ := Select(Builtin(), nil, o) // naming nothing cannot fail
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
