package stream

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// The Stream: its options, how it takes each event, and how it checks a
// window, adds up what the judges found and settles the report at Close.

// Options configure a windowed check.
type Options struct {
	// Reach is how much history after its own part a window looks at, so
	// that an anomaly starting in it is seen whole. Zero: (StuckFactor+1)
	// x the run's TTL (or the largest acquire TTL so far): a stuck lock
	// takes StuckFactor TTLs to show, a waiting client is bridged over
	// one.
	Reach time.Duration
	// Back is how much history before its own part a window keeps beyond
	// the leases it carries, so that a stretch of waiting or of a free
	// lock that began earlier is seen to: zero means Reach, so that a
	// stuck stretch going on from an earlier window is long enough in this
	// one to be recognised and joined to its start.
	Back time.Duration
	// Window is the length of each window's own part. Zero: Batch x Reach.
	Window time.Duration
	// MaxEvents closes a window's own part early once that many events
	// were retained since the last check, so that a run at full speed
	// with a long TTL does not hold minutes of events (see advance). Zero:
	// DefaultMaxEvents.
	MaxEvents int
	// Batch sets the own part of a window to Batch x Reach when Window is
	// zero (0 or 1: Reach). Each window re-checks Back and Reach of history
	// around its own part, so a longer own part re-checks less of each
	// event: a check of a saved history takes a few Reach at once, a live
	// run one, so that its anomalies show soon.
	Batch int
	// OnAnomaly, when set, receives each anomaly as soon as the window
	// that owns it has been checked, from the goroutine that calls Add.
	OnAnomaly func(checker.Anomaly)
}

// Stream checks a history event by event. Add and Close must be called from
// one goroutine; Found may be called from any.
type Stream struct {
	o      Options
	mo     checker.MutexOptions
	run    *history.RunInfo
	ev     evidence           // what the run put to the test (see checker.Untested)
	sel    *checker.Composite // the checkers selected, with their severities
	judges []namedJudge
	whole  []checker.Checker
	order  []string // checker names, in checker.Select's order
	acc    map[string]*checker.Collector
	stats  map[string]map[string]int64

	buf   []history.Event  // retained events, in time order
	pairs pairer           // every operation, paired for checker.Window.Ops
	infos []history.Event  // info events since the last window
	open  map[int64]openOp // retained operations not completed yet
	acqAt map[string]int64 // per key, the latest call or return of an acquire
	cut   *cut             // the window whose own part has closed, if any
	// ownEvents counts the events retained since the last check.
	ownEvents int
	masked    []masked        // invocations hidden from the window being checked
	allEvs    []history.Event // for whole checkers only
	ops       map[int64]*opInfo
	leases    map[leaseKey]*leaseInfo
	holds     map[int][]*leaseInfo // process -> leases it holds
	faults    []history.Event      // fault and master-switch events
	first     bool                 // the first window has not been checked
	ownFrom   int64
	maxTTL    int64
	last      int64
	events    int64
	nonlin    map[string]bool     // keys already found not linearizable
	stuck     map[string]stuckRef // per key, the last stuck stretch reported
	found     atomic.Int64
	safety    atomic.Int64
	nWindows  int64
	maxOps    int64
	closed    bool
	// stalls are the stalls of the harness that may have let a lease run
	// out; nStalled counts the anomalies they explain, longest the
	// longest of those stalls.
	stalls   []stallSpan
	nStalled int64
	longest  stallSpan
}

// namedJudge is the judge of one checker.
type namedJudge struct {
	name string
	j    checker.Judge
}

// stuckRef is a stuck-lock anomaly a checker.Collector lists, at index i.
type stuckRef struct {
	c *checker.Collector
	i int
}

// New returns a windowed check by the checkers checker.Select(r, names, o)
// picks.
func New(r *checker.Registry, names []string, o checker.MutexOptions, so Options) (*Stream, error) {
	// The checkers list every anomaly they find: the stream keeps those a
	// window owns and counts them, and only its own collectors cap what
	// they list. A checker capped per window would leave out of the count
	// what it found beyond the cap.
	all := o
	all.MaxAnomalies = -1
	c, err := checker.Select(r, names, all)
	if err != nil {
		return nil, err
	}
	s := &Stream{o: so, mo: o, sel: c, acc: map[string]*checker.Collector{}, stats: map[string]map[string]int64{},
		ops: map[int64]*opInfo{}, leases: map[leaseKey]*leaseInfo{}, holds: map[int][]*leaseInfo{}, pairs: newPairer(),
		open: map[int64]openOp{}, acqAt: map[string]int64{},
		nonlin: map[string]bool{}, stuck: map[string]stuckRef{}, first: true, ownFrom: math.MinInt64}
	for _, x := range c.Checkers() {
		s.order = append(s.order, x.Name())
		s.acc[x.Name()] = checker.NewCollector(x.Name(), o.MaxAnomalies)
		if w, ok := x.(checker.Windowed); ok {
			s.judges = append(s.judges, namedJudge{x.Name(), w.Start()})
		} else {
			s.whole = append(s.whole, x)
		}
	}
	return s, nil
}

// Unbounded names the checkers that judge the whole history at once (they
// implement checker.Checker only): for them the stream keeps every event until
// Close, so its memory grows with the history.
func (s *Stream) Unbounded() []string {
	out := make([]string, len(s.whole))
	for i, x := range s.whole {
		out[i] = x.Name()
	}
	return out
}

// Found reports how many anomalies the stream has confirmed so far, and how
// many of them are safety anomalies.
func (s *Stream) Found() (all, safety int64) { return s.found.Load(), s.safety.Load() }

// Faults returns the fault windows seen so far (see history.History.Faults);
// one not healed yet lasts to the latest event.
func (s *Stream) Faults() []history.Window {
	evs := append(append([]history.Event(nil), s.faults...), history.Event{Time: s.last, Type: history.Info, Op: history.FaultStep})
	return (&history.History{Run: s.run, Events: evs}).Faults()
}

// Infos returns the master switches and fault events seen so far.
func (s *Stream) Infos() []history.Event { return append([]history.Event(nil), s.faults...) }

// Events reports how many events the stream has been given, the header aside.
func (s *Stream) Events() int64 { return s.events }

// Add takes the next event of the history, which the caller has validated
// (history.Reader, history.Validator). When it completes a window, Add
// checks it before returning.
func (s *Stream) Add(ctx context.Context, e history.Event) {
	if s.closed {
		return
	}
	s.ev.add(e)
	if e.Run != nil {
		s.run = e.Run
		return
	}
	s.events++
	if len(s.whole) > 0 {
		s.allEvs = append(s.allEvs, e)
	}
	if s.advance(e.Time) {
		s.step(ctx, false)
	}
	s.last = max(s.last, e.Time)
	if e.Type == history.Info {
		s.infos = append(s.infos, e)
	} else {
		inv, done := s.pairs.add(e)
		if !e.Op.IsLock() {
			if done && e.Type == history.Unknown {
				// It ends its process's hold, which the window must see.
				s.track(inv)
				s.track(e)
				s.insert(inv)
				s.insert(e)
			}
			// Not retained, but a judge reads it in the window's Ops:
			// it counts toward closing the own part (MaxEvents).
			s.ownEvents++
			return
		}
	}
	s.track(e)
	s.push(e)
}

// push appends e, the latest event, to the buffer.
func (s *Stream) push(e history.Event) {
	if len(s.buf) == cap(s.buf) {
		// By a quarter: the buffer keeps its room from window to window
		// (see prune), so it regrows only while the run speeds up, and
		// room never used is heap the collector counts as live (doubling
		// left up to half the buffer's 280 bytes an event empty).
		s.buf = slices.Grow(s.buf, max(1024, len(s.buf)/4))
	}
	s.buf = append(s.buf, e)
	s.ownEvents++
}

// insert puts e into the buffer at its place in time: a resource
// operation's invocation joins the window only once its completion says it
// matters, after later events.
func (s *Stream) insert(e history.Event) {
	i := sort.Search(len(s.buf), func(i int) bool { return s.buf[i].Time > e.Time })
	s.push(e)
	copy(s.buf[i+1:], s.buf[i:len(s.buf)-1])
	s.buf[i] = e
}

// ttl is the lease time windows are measured in: the run's, or the
// largest an acquire named, else a second.
func (s *Stream) ttl() int64 {
	ttl := s.maxTTL
	if s.run != nil && s.run.TTLMillis > 0 {
		ttl = max(ttl, s.run.TTLMillis*1e6)
	}
	if ttl <= 0 {
		ttl = 1e9
	}
	return ttl
}

// sizes returns the reach, the own length and the back of a window.
func (s *Stream) sizes() (reach, win, back int64) {
	ttl := s.ttl()
	factor := s.mo.Liveness.StuckFactor
	if factor <= 0 {
		factor = 3
	}
	reach = int64(s.o.Reach)
	if reach <= 0 {
		reach = int64((factor + 1) * float64(ttl))
	}
	win = int64(s.o.Window)
	if win <= 0 {
		win = reach * int64(max(1, s.o.Batch))
	}
	back = int64(s.o.Back)
	if back <= 0 {
		back = reach
	}
	return reach, win, back
}

// step checks the current window and moves on to the next; final checks
// everything left, to the end of the history.
func (s *Stream) step(ctx context.Context, final bool) {
	ownFrom, ownTo, cutoff := s.ownFrom, int64(0), s.last
	c := s.cut
	if c != nil {
		ownTo = c.ownTo
	}
	later := s.pairs.later(s.last)
	if final {
		ownTo, cutoff, later = forever, forever, forever
		// A resource operation never completed is of unknown outcome.
		for _, inv := range s.pairs.openResource() {
			s.track(inv)
			s.insert(inv)
		}
		if n := len(s.buf); n > 0 && s.buf[n-1].Time < s.last {
			// The history ends with its last event, retained or not: an
			// instant that no checker reads.
			s.push(history.Event{Time: s.last, Type: history.Info, Op: history.FaultStep, Index: -1})
		}
	}
	w := &checker.Window{Run: s.run, Ops: s.pairs.take(final, s.last), Later: later, Infos: s.infos,
		OwnFrom: ownFrom, OwnTo: ownTo, Final: final}
	w.Events = &history.History{Run: s.run, Events: s.window(cutoff)}
	w.SetInflight(s.inflight())
	w.SetHidden(s.hidden())
	s.infos = nil
	s.nWindows++
	results := make([]checker.Result, len(s.judges))
	var wg sync.WaitGroup
	for i, j := range s.judges {
		wg.Go(func() { results[i] = j.j.Judge(ctx, w) })
	}
	wg.Wait()
	for i, r := range results {
		r.Checker = s.judges[i].name
		s.merge(r, ownFrom)
	}
	from := s.judgedLater(ownTo, s.horizon(c, final))
	s.unmask()
	s.first = false
	s.ownFrom = ownTo
	s.cut = nil
	if !final {
		s.prune(from)
		s.ownEvents = len(s.buf) - sort.Search(len(s.buf), func(i int) bool { return s.buf[i].Time >= ownTo })
	}
}

// merge folds a window's result into the stream's result of that checker:
// each anomaly the judge returned, but for a nonlinearizable key already
// reported and the parts of a stuck stretch reported before.
func (s *Stream) merge(r checker.Result, ownFrom int64) {
	c := s.acc[r.Checker]
	if c == nil {
		return
	}
	for _, a := range r.Anomalies {
		if s.joined(c, a, ownFrom) || a.JoinOnly() {
			continue
		}
		if a.Kind == checker.KindNonlinearizable {
			// One per key, as a check of the whole history reports.
			if len(a.Keys) > 0 && s.nonlin[a.Keys[0]] {
				continue
			}
			for _, k := range a.Keys {
				s.nonlin[k] = true
			}
		}
		s.accept(c, a)
	}
	if r.Error != "" {
		c.Fail(r.Error)
	}
	st := s.stats[r.Checker]
	if st == nil {
		st = map[string]int64{}
		s.stats[r.Checker] = st
	}
	for k, v := range r.Stats {
		if old, seen := st[k]; seen && strings.HasPrefix(k, "min_") {
			st[k] = min(old, v) // a least value, as checker.StatClosestGrant
			continue
		}
		st[k] += v
	}
}

// joined reports whether a belongs to a stuck stretch an earlier window
// reported already, cut at that window's end: a later part of it is
// joined to that anomaly, and a failed acquire inside it is part of it.
func (s *Stream) joined(c *checker.Collector, a checker.Anomaly, ownFrom int64) bool {
	if len(a.Keys) != 1 || a.Kind != checker.KindStuckLock && a.Kind != checker.KindSpuriousFailure {
		return false
	}
	ref, ok := s.stuck[a.Keys[0]]
	if !ok || ref.c != c {
		return false
	}
	prev := c.Listed(ref.i)
	switch {
	case a.Kind == checker.KindStuckLock && a.StartNS < ownFrom && a.StartNS <= prev.EndNS:
		c.Extend(ref.i, a)
		return true
	case a.Kind == checker.KindSpuriousFailure && a.StartNS >= prev.StartNS && a.EndNS <= prev.EndNS:
		return true
	}
	return false
}

// accept lists a, a window's own anomaly, and tells OnAnomaly; one that
// a stall of the harness explains is listed apart.
func (s *Stream) accept(c *checker.Collector, a checker.Anomaly) {
	if st, ok := s.stalledBy(a); ok {
		s.stalled(c, a, st)
		return
	}
	if i := c.Add(a); i >= 0 && a.Joinable() && len(a.Keys) == 1 {
		s.stuck[a.Keys[0]] = stuckRef{c, i}
	}
	s.found.Add(1)
	if s.sel.SeverityOf(a.Kind) == checker.SeveritySafety {
		s.safety.Add(1)
	}
	if s.o.OnAnomaly != nil {
		a.Severity = s.sel.SeverityOf(a.Kind)
		s.o.OnAnomaly(a)
	}
}

// Close checks what is left, runs the whole-history checkers, and returns
// the report, as checker.Composite.Report would for the whole history.
func (s *Stream) Close(ctx context.Context) checker.Report {
	if !s.closed {
		s.step(ctx, true)
		s.closed = true
		if len(s.whole) > 0 {
			h := &history.History{Run: s.run, Events: s.allEvs}
			for _, r := range checker.Compose(s.whole...).Report(ctx, h).Results {
				s.merge(r, math.MinInt64)
			}
			s.allEvs = nil
		}
		s.buf, s.ops, s.leases = nil, nil, nil
	}
	results := make([]checker.Result, 0, len(s.order))
	for _, name := range s.order {
		r := s.acc[name].Result()
		r.Stats = map[string]int64{}
		for k, v := range s.stats[name] {
			r.Stats[k] = v
		}
		sort.SliceStable(r.Anomalies, func(i, j int) bool { return r.Anomalies[i].StartNS < r.Anomalies[j].StartNS })
		results = append(results, r)
	}
	if len(results) > 0 {
		results[0].Stats["stream.windows"] = s.nWindows
		results[0].Stats["stream.max_window_ops"] = s.maxOps
	}
	rep := checker.Fold(results...)
	if s.nStalled > 0 {
		rep.Notes = append(rep.Notes, s.stallNote())
	}
	for _, name := range s.Unbounded() {
		rep.Notes = append(rep.Notes, fmt.Sprintf("memory not bounded: checker %s judges the whole history at once, so every event was kept for it", name))
	}
	s.sel.ApplySeverities(&rep)
	requireEvidence(&rep, &s.ev)
	return rep
}

// String describes the stream's state, for debugging.
func (s *Stream) String() string {
	return fmt.Sprintf("stream: %d events, %d retained, %d ops, %d leases, %d windows", s.events, len(s.buf), len(s.ops), len(s.leases), s.nWindows)
}
