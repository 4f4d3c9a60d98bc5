package checker

import "github.com/locktorture/locktorture/history"

// What package checker/stream needs of this package and nothing else does:
// a stream judges a long run window by window, and must add up what each
// window's judges found into the result a check of the whole history
// would give (the same list, counts and caps, a stuck stretch reported
// once and whole), mark severities as the registry declares them, and
// tell a window which operations it hides. Checkers outside this module
// need none of it.

// Collector builds one checker's Result from the anomalies a stream
// accepts, window after window: it counts every one and lists at most
// MaxAnomalies of each kind, as a whole check does. It exists for package
// checker/stream.
type Collector struct{ c *collector }

// NewCollector returns a collector of the result of the checker named
// name; maxAnomalies caps the anomalies listed per kind as the
// MaxAnomalies option does (0: the default, negative: all).
func NewCollector(name string, maxAnomalies int) *Collector {
	return &Collector{newCollector(name, newSettings([]Option{MaxAnomalies(maxAnomalies)}))}
}

// Add counts a and lists it unless its kind is past the cap; it returns
// where a is listed (see Listed), or -1.
func (c *Collector) Add(a Anomaly) int {
	n := len(c.c.res.Anomalies)
	c.c.add(a)
	if len(c.c.res.Anomalies) > n {
		return n
	}
	return -1
}

// AddStalled lists a, which a stall of the harness explains, and counts it
// in Result.Stalled, apart from the verdict.
func (c *Collector) AddStalled(a Anomaly) { c.c.addStalled(a) }

// Listed returns the i-th anomaly listed.
func (c *Collector) Listed(i int) Anomaly { return c.c.res.Anomalies[i] }

// Extend joins b, a later part of the same stuck stretch, to the i-th
// anomaly listed (see Anomaly.Joinable): its end, the clients that waited
// and its detail grow to cover both.
func (c *Collector) Extend(i int, b Anomaly) { c.c.res.Anomalies[i].extend(b) }

// Fail notes that the checker could not decide, unless it already did.
func (c *Collector) Fail(err string) {
	if c.c.res.Error == "" {
		c.c.fail(err)
	}
}

// Result settles the verdict of what was collected.
func (c *Collector) Result() Result { return c.c.result() }

// Joinable reports whether a is a stuck lock that knows its stretch, so
// that a stream can join to it the later parts a later window finds
// (Collector.Extend).
func (a *Anomaly) Joinable() bool { return a.Kind == KindStuckLock && a.stuck != nil }

// JoinOnly reports whether a is a stuck lock that its window does not own
// (see Window.Own): a stream joins it to the stretch an earlier window
// reported, or else drops it.
func (a *Anomaly) JoinOnly() bool { return a.joinOnly }

// SeverityOf is the severity of k as the entries of the registry c was
// selected from declare it (see Select), else as SeverityOf says.
func (c *Composite) SeverityOf(k Kind) Severity { return c.sev.of(k) }

// ApplySeverities sets the severity of every anomaly of rep, and its
// counts by severity, as the entries of the registry c was selected from
// declare them: what Report does for a composite's own results, for a
// report a stream folded.
func (c *Composite) ApplySeverities(rep *Report) { c.sev.apply(rep) }

// SetInflight tells w the calls of the acquires, per key, that a stream
// hid from Events because they had not completed by the window's cutoff:
// a free stretch they overlap may not have been free to them. A stream
// calls it before any judge reads w.
func (w *Window) SetInflight(calls map[string][]int64) { w.inflight = calls }

// SetHidden tells w every operation a stream hid from Events because it
// had not completed by the window's cutoff, as it was invoked (its
// Status Unknown, its Return forever): a write of a lease still running
// then may have landed at any moment of the window, which the lease-claims
// rules must know to judge what a release or refresh found exactly as a
// check of the whole history does. A stream calls it before any judge
// reads w.
func (w *Window) SetHidden(ops []history.Operation) { w.hidden = ops }

// UnknownWriteEnd is the latest a write of unknown outcome, called at call
// and given up on at ret with ttl, may keep its key, given the fault
// windows ws: as lease-claims reads it, a ttl past the later of ret and
// the heal of every fault active while it ran (a command held up by a
// paused server or a cut link runs when that ends), plus the ttl it lives.
// A stream keeps the lease of such a write that long.
func UnknownWriteEnd(ws []history.Window, call, ret, ttl int64) int64 {
	if ttl <= 0 || ret >= forever {
		return forever
	}
	healed := ret
	for _, w := range ws {
		if w.Start <= ret && w.End >= call {
			healed = max(healed, w.End)
		}
	}
	return sat64(healed, 2*ttl)
}
