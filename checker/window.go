package checker

import (
	"context"
	"math"
	"sort"
	"sync"

	"github.com/locktorture/locktorture/history"
)

// A checker that sees the whole history at the end makes a run hold every
// event until then, so a run's memory grows with its length. A Windowed
// checker is judged instead window by window as the history is written
// (see package checker/stream), and carries from one window to the next
// only what it still needs: the counter's last value, the highest fencing
// token, the tasks already queued. Every built-in checker is one; a checker from another
// module that implements Windowed streams the same way. A checker that
// implements only Checker still works, but the stream must keep the whole
// history for it, and says so (stream.Stream.Unbounded).

// Windowed is a checker that can be judged window by window.
type Windowed interface {
	Checker
	// Start returns a fresh judge for one streamed check: the stream calls
	// it once, and then Judge once per window, in order.
	Start() Judge
}

// Judge is the state one Windowed checker carries through a stream.
type Judge interface {
	// Judge examines one window and returns what it found there. An
	// anomaly returned once is counted once: a judge that looks at
	// history again (Window.Events overlaps the windows before and after)
	// must not return it again (Window.Own keeps those a window owns).
	// Judge must not modify w; judges of one stream run concurrently.
	Judge(ctx context.Context, w *Window) Result
}

// Window is one step of a streamed check. It offers a judge two views of
// the history, and a judge reads the one it needs:
//
//   - Ops, each operation once, as it completes: for a judge that carries
//     its state (a counter, a set of tasks) from window to window;
//   - Events, the lock operations around the window's own part
//     [OwnFrom, OwnTo), with the leases still alive and the holds still
//     open carried in from before: for a judge that re-examines a stretch
//     of history a few leases long and keeps what starts in its own part.
type Window struct {
	Run *history.RunInfo
	// Ops are the operations that completed since the previous window, in
	// the order they completed (the history's order), each given once in
	// a stream. The final window adds those never completed, as Unknown
	// returning at the history's end, as History.Operations does.
	Ops []history.Operation
	// Later bounds the operations of later windows: every one of them was
	// called at or after Later (forever in the final window). So an
	// operation of a key's resource that returned by Later has every
	// operation the resource applied before it (lower Seq) in this window
	// or an earlier one, and one called before Later has every operation
	// called before it.
	Later int64
	// Infos are the crashes, fault starts and heals and master switches
	// since the previous window.
	Infos []history.Event
	// Events are the retained lock events up to the window's cutoff: Back
	// of history before OwnFrom and, after OwnTo, until every anomaly that
	// starts in the own part can be seen whole, with the operations not
	// completed by then hidden. Resource operations are left out, but for
	// those whose outcome is unknown (they end their process's hold).
	Events *history.History
	// OwnFrom and OwnTo bound the window's own part: an anomaly found in
	// Events is this window's to report when it starts there.
	OwnFrom, OwnTo int64
	// Final is set on the last window.
	Final bool

	ixOnce sync.Once
	ix     *index
	// inflight lists the calls of acquires hidden from Events, per key.
	inflight map[string][]int64
	// hidden are the operations hidden from Events, as invoked.
	hidden []history.Operation
}

// Own returns r with only the anomalies this window owns: those starting
// (or settled, see Anomaly.owner) in its own part. A nonlinearizable
// anomaly may start earlier (the order that proves a key illegal can need
// what came after its culprit): it is kept if it starts before OwnTo, and
// a stream reports one per key.
func (w *Window) Own(r Result) Result {
	out := r.Anomalies[:0:0]
	for _, a := range r.Anomalies {
		at := max(a.StartNS, a.owner)
		switch {
		case at >= w.OwnTo:
		case at >= w.OwnFrom || a.Kind == KindNonlinearizable:
			out = append(out, a)
		case a.Kind == KindStuckLock:
			// It may go on from a stretch an earlier window reported:
			// the stream joins it there, or drops it.
			a.joinOnly = true
			out = append(out, a)
		}
	}
	r.Anomalies = out
	return r
}

// index returns the one index of Events all the lock checkers share.
func (w *Window) index() *index {
	w.ixOnce.Do(func() {
		w.ix = newIndex(w.Events)
		w.ix.inflight = w.inflight
		w.ix.hidden = w.hidden
	})
	return w.ix
}

// WholeWindow is the whole of h as the one and final window of a stream:
// what a Windowed checker judges when asked to Check a history at once.
func WholeWindow(h *history.History) *Window {
	ops := h.Operations()
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Return < ops[j].Return })
	return &Window{Run: h.Run, Ops: ops, Later: forever, Infos: h.Infos(), Events: h,
		OwnFrom: math.MinInt64, OwnTo: forever, Final: true}
}

// lockChecker is a checker of the lock's own operations, which reads the
// index of a history (holds, leases, each key's operations). A Composite
// builds that index once for all of them and a stream once per window, so
// each such checker is only its rule; the whole history and every window
// are judged the same way.
type lockChecker struct {
	name string
	s    settings
	// rule adds to c what it finds in ix.
	rule func(ctx context.Context, c *collector, ix *index)
}

func newLockChecker(name string, opts []Option, rule func(context.Context, *collector, *index)) Checker {
	return &lockChecker{name: name, s: newSettings(opts), rule: rule}
}

func (l *lockChecker) Name() string { return l.name }

func (l *lockChecker) Check(ctx context.Context, h *history.History) Result {
	return l.checkIndex(ctx, newIndex(h))
}

func (l *lockChecker) checkIndex(ctx context.Context, ix *index) Result {
	c := newCollector(l.name, l.s)
	l.rule(ctx, c, ix)
	return c.result()
}

// Start implements Windowed: each window's events are judged afresh.
func (l *lockChecker) Start() Judge { return indexJudge{l} }

// indexJudge judges each window's Events afresh with a lock checker that
// reads the shared index, and keeps what the window owns.
type indexJudge struct{ c indexed }

func (j indexJudge) Judge(ctx context.Context, w *Window) Result {
	return w.Own(j.c.checkIndex(ctx, w.index()))
}

// carryingChecker is a checker whose judge carries its state from window
// to window (a counter's last value, the tasks queued so far) and reads
// each operation once, in Window.Ops. The whole history is one window
// judged by a fresh carrier, so a streamed check and a whole one run the
// same code.
type carryingChecker struct {
	name string
	s    settings
	// start returns the state of one fresh check.
	start func() carrier
}

// carrier is the state one carryingChecker keeps through a check.
type carrier interface {
	// judge adds to c what it finds in w, given what earlier windows left.
	judge(c *collector, w *Window)
}

func newCarryingChecker(name string, opts []Option, start func() carrier) Checker {
	return &carryingChecker{name: name, s: newSettings(opts), start: start}
}

func (k *carryingChecker) Name() string { return k.name }

// Check judges h at once with a fresh carrier.
func (k *carryingChecker) Check(ctx context.Context, h *history.History) Result {
	return k.Start().Judge(ctx, WholeWindow(h))
}

// Start implements Windowed.
func (k *carryingChecker) Start() Judge { return carryJudge{k, k.start()} }

// carryJudge collects one window's Result from a carrier.
type carryJudge struct {
	k *carryingChecker
	c carrier
}

func (j carryJudge) Judge(_ context.Context, w *Window) Result {
	c := newCollector(j.k.name, j.k.s)
	j.c.judge(c, w)
	return c.result()
}
