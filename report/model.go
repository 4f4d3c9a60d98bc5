package report

import (
	"sort"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// The page model: what the timeline shows, computed from the history alone
// so it can be tested on hand-written histories without rendering anything.

// opLines are where one operation's two events sit in history.jsonl (1-based;
// 0 when the event is missing).
type opLines struct{ invoke, done int }

// hold is one time a client believed it held a key, with the lease it was
// granted drawn behind it.
type hold struct {
	Key             string
	Client, Process int
	Lease           string
	// From is the acquire's return, To the release's invocation (or the
	// crash, or the end of the history when the hold never ended).
	From, To int64
	// LeaseFrom is the earliest the lease can have begun (the winning
	// attempt was sent), LeaseTo when it ran out: its TTL after the last
	// successful refresh, or earlier when a release deleted it.
	LeaseFrom, LeaseTo int64
	// Open: never released (a crash or the end of the run).
	Open bool
	// AcquireLine and ReleaseLine locate the hold in history.jsonl.
	AcquireLine, ReleaseLine int
	// Refreshes are the times successful refreshes were sent.
	Refreshes []int64

	sub int // a busy key's hold: its sub-lane, given as it came
}

// mark is an operation of unknown outcome, drawn from its call to the time
// the client gave up.
type mark struct {
	Process   int
	Op        history.Op
	Call, Ret int64
	Line      int
}

// lane is one row of a key's timeline: a client, or one of its sub-lanes
// when holds of its successive processes overlap (a process that gave up on
// an unknown outcome may still hold the lock while the next one acquires).
type lane struct {
	Client    int
	Sub       int
	Processes []int
	Holds     []hold
	Marks     []mark
	// cover is, for a busy key, the share of each overview column held,
	// from every hold of the lane (Holds has only those drawn one by one).
	cover []float64
}

// keyModel is the timeline of one key.
type keyModel struct {
	Key   string
	Lanes []*lane
	Holds int
}

// anomalyRef is an anomaly placed on the page.
type anomalyRef struct {
	checker.Anomaly
	N   int    // 1-based, the order of the list
	Key string // the key whose timeline shows it
	// Lines are the history.jsonl lines of the events it is about.
	Lines []int
}

// model is everything the timeline needs.
type model struct {
	End     int64
	TTL     int64
	Clients int
	Keys    []*keyModel
	// HiddenKeys counts the keys not in Keys, which the page never draws
	// (at least that many when HiddenOver).
	HiddenKeys int
	HiddenOver bool
	Faults     []history.Window
	Switches   []history.Event
	Anomalies  []anomalyRef
}

// maxLinesPerAnomaly bounds the history lines listed for one anomaly.
const maxLinesPerAnomaly = 8

// buildModel lays the history out as lanes of holds per key and places the
// anomalies. It trusts nothing about the anomalies: ones naming unknown keys
// land on the first key, times are clipped to the history.
func buildModel(h *history.History, anomalies []checker.Anomaly) *model {
	return builderOf(h, anomalies).finish()
}

// builderOf makes both passes over a history held in memory.
func builderOf(h *history.History, anomalies []checker.Anomaly) *modelBuilder {
	x := newExtentScanner(anomalies)
	for _, e := range h.Events {
		x.add(e)
	}
	b := newModelBuilder(h.Run, anomalies, x)
	for _, e := range h.Events {
		b.add(e)
	}
	return b
}

// openOp is an operation whose completion has not been read yet: the part
// of its invocation the model needs.
type openOp struct {
	process, client int
	op              history.Op
	key, lease      string
	call, ttl       int64
	line            int
}

type leaseKey struct{ key, lease string }

type clientKey struct {
	key    string
	client int
}

// modelBuilder builds the model one event at a time, the second pass (see
// extent), so that the report of a history far larger than memory holds
// only the open operations, the holds it draws (a few words each) and the
// per-bucket figures of the plots, never the events.
type modelBuilder struct {
	m         *model
	anomalies []checker.Anomaly
	// wanted are the processes anomalies without a lease name: only their
	// operations are kept to find the history lines they are about.
	wanted  map[int]bool
	line    int
	hdr     int
	open    map[int64]*openOp
	crashed map[int]bool
	keys    map[string]*keyModel
	marksOf map[clientKey][]mark
	// holds are the holds of the keys that are not busy, in acquire
	// order; live (the leases not yet released) and byProc (each
	// process's last hold) point at those and at the busy keys' holds.
	holds  []*hold
	live   map[leaseKey]*hold
	byProc map[int]*hold
	// ext is the first pass; busy lays out the busy keys' holds, whose
	// unreleased ones are in unreleased.
	ext        *extent
	busy       map[clientKey]*busyClient
	unreleased map[*hold]bool
	pops       []procOp
	infos      []history.Event
	series     *seriesBuilder
	lastTime   int64
}

// newModelBuilder starts the second pass over a history whose first pass
// is x.
func newModelBuilder(run *history.RunInfo, anomalies []checker.Anomaly, x *extentScanner) *modelBuilder {
	b := &modelBuilder{m: &model{}, anomalies: anomalies, wanted: map[int]bool{}, open: map[int64]*openOp{},
		crashed: map[int]bool{}, keys: map[string]*keyModel{}, marksOf: map[clientKey][]mark{},
		live: map[leaseKey]*hold{}, byProc: map[int]*hold{}, busy: map[clientKey]*busyClient{},
		unreleased: map[*hold]bool{}}
	if run != nil {
		b.hdr = 1
		b.m.TTL = run.TTLMillis * 1e6
		b.m.Clients = run.Clients
	}
	b.ext = x.finish(b.m.TTL, anomalies)
	b.series = newSeriesBuilder(b.ext.end)
	for _, a := range anomalies {
		if len(a.Leases) == 0 {
			for _, p := range a.Processes {
				b.wanted[p] = true
			}
		}
	}
	return b
}

func (b *modelBuilder) keyOf(k string) *keyModel {
	km := b.keys[k]
	if km == nil {
		km = &keyModel{Key: k}
		b.keys[k] = km
	}
	return km
}

// add takes the next event of the history (the header excluded).
func (b *modelBuilder) add(e history.Event) {
	b.line++
	line := b.line + b.hdr
	b.lastTime = e.Time
	b.series.add(e)
	switch {
	case e.Type == history.Invoke:
		b.open[e.ID] = &openOp{process: e.Process, client: e.Client, op: e.Op, key: e.Key, lease: e.Lease,
			call: e.Time, ttl: e.TTLMillis * 1e6, line: line}
	case e.Type.IsCompletion():
		if o, ok := b.open[e.ID]; ok {
			delete(b.open, e.ID)
			b.complete(o, &e, line)
		}
	case e.Type == history.Info:
		switch e.Op {
		case history.Crash:
			if !b.crashed[e.Process] {
				b.crashed[e.Process] = true
				// A crash ends the hold the process has (the crash comes
				// after its acquire returned).
				if hd, ok := b.byProc[e.Process]; ok {
					if hd.Open && e.Time >= hd.From && hd.To == toEnd {
						hd.To = e.Time
					}
				}
			}
		case history.MasterSwitch:
			b.m.Switches = append(b.m.Switches, e)
		}
		if e.Op == history.FaultStart || e.Op == history.FaultHeal {
			b.infos = append(b.infos, e)
		}
	}
}

// toEnd marks a time that is the end of the history, not known before the
// last event.
const toEnd = int64(-1) << 62

// complete files one operation; done is nil when it never completed.
func (b *modelBuilder) complete(o *openOp, done *history.Event, doneLine int) {
	if o.key == "" {
		return
	}
	ck := clientKey{o.key, o.client}
	status, ret := history.Unknown, toEnd
	if done != nil {
		status, ret = done.Type, done.Time
	}
	if b.wanted[o.process] {
		b.pops = append(b.pops, procOp{process: o.process, key: o.key, call: o.call, ret: ret, line: o.line})
	}
	if _, drawn := b.ext.holds[o.key]; !drawn {
		return // a key the page never draws (see extentScanner)
	}
	b.keyOf(o.key)
	if status == history.Unknown {
		b.marksOf[ck] = append(b.marksOf[ck], mark{Process: o.process, Op: o.op, Call: o.call, Ret: ret, Line: o.line})
	}
	switch {
	case o.op == history.Acquire && status == history.OK:
		b.acquired(o, ck, done, ret, doneLine)
	case o.op == history.Refresh && status == history.OK:
		b.refreshed(o)
	case o.op == history.Release:
		b.released(o, status, done, ret)
	}
}

// acquired opens the hold an ok acquire began.
func (b *modelBuilder) acquired(o *openOp, ck clientKey, done *history.Event, ret int64, doneLine int) {
	lease := done.Lease
	ttl := done.TTLMillis * 1e6
	start := o.call
	if done.Sent > start && done.Sent <= ret {
		start = done.Sent
	}
	hd := &hold{Key: o.key, Client: o.client, Process: o.process, Lease: lease, From: ret, To: toEnd, Open: true,
		LeaseFrom: start, LeaseTo: toEnd, AcquireLine: doneLine}
	if ttl > 0 {
		hd.LeaseTo = start + ttl
	}
	if b.ext.busy(o.key) {
		b.busyClient(ck).place(o.client, hd)
		b.unreleased[hd] = true
	} else {
		b.holds = append(b.holds, hd)
	}
	b.byProc[o.process] = hd
	if lease != "" {
		b.live[leaseKey{o.key, lease}] = hd
	}
}

// refreshed extends the lease an ok refresh renewed.
func (b *modelBuilder) refreshed(o *openOp) {
	hd, ok := b.live[leaseKey{o.key, o.lease}]
	if !ok {
		return
	}
	hd.Refreshes = append(hd.Refreshes, o.call)
	if o.ttl > 0 && o.call+o.ttl > hd.LeaseTo && hd.LeaseTo != toEnd {
		hd.LeaseTo = o.call + o.ttl
	}
}

// released closes the hold a release ended, and its lease when the
// release deleted the key.
func (b *modelBuilder) released(o *openOp, status history.Type, done *history.Event, ret int64) {
	hd, ok := b.live[leaseKey{o.key, o.lease}]
	if !ok || o.lease == "" {
		hd, ok = b.byProc[o.process]
	}
	if !ok {
		return
	}
	// A released lease takes no more refreshes: forget it, so that
	// what the report keeps per lease is bounded by the run's
	// concurrency, not its length.
	delete(b.live, leaseKey{o.key, o.lease})
	if !hd.Open || o.call < hd.From {
		return
	}
	hd.To, hd.Open, hd.ReleaseLine = o.call, false, o.line
	if status == history.OK && done.Deleted != nil && *done.Deleted && (hd.LeaseTo == toEnd || ret < hd.LeaseTo) {
		hd.LeaseTo = ret
	}
	if b.unreleased[hd] && hd.LeaseTo != toEnd {
		// Nothing changes a released hold any more (the lease of one
		// without TTL may: it waits for the end).
		delete(b.unreleased, hd)
		b.busyClient(clientKey{hd.Key, hd.Client}).done(hd, b.ext)
		if b.byProc[o.process] == hd {
			delete(b.byProc, o.process) // a released hold takes no crash
		}
	}
}

// busyClient returns the layout of a busy key's client.
func (b *modelBuilder) busyClient(ck clientKey) *busyClient {
	c := b.busy[ck]
	if c == nil {
		c = &busyClient{subOf: map[int]int{}}
		b.busy[ck] = c
	}
	return c
}

// finish files the operations that never completed and lays out the lanes.
func (b *modelBuilder) finish() *model {
	m := b.m
	m.End = b.lastTime
	pending := make([]*openOp, 0, len(b.open))
	for _, o := range b.open {
		pending = append(pending, o)
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].line < pending[j].line })
	for _, o := range pending {
		b.complete(o, nil, 0)
	}
	fix := func(t int64) int64 {
		if t == toEnd {
			return m.End
		}
		return t
	}
	for ck, ms := range b.marksOf {
		for i := range ms {
			ms[i].Ret = fix(ms[i].Ret)
		}
		b.marksOf[ck] = ms
	}
	for i := range b.pops {
		b.pops[i].ret = max(b.pops[i].call, fix(b.pops[i].ret))
	}
	fixHold := func(hd *hold) {
		hd.To, hd.LeaseTo = fix(hd.To), fix(hd.LeaseTo)
		if hd.LeaseTo < hd.LeaseFrom {
			hd.LeaseTo = hd.LeaseFrom
		}
	}
	holdsOf := map[clientKey][]*hold{}
	for _, hd := range b.holds {
		holdsOf[clientKey{hd.Key, hd.Client}] = append(holdsOf[clientKey{hd.Key, hd.Client}], hd)
		fixHold(hd)
	}
	// The busy keys' holds never released end with the history.
	rest := make([]*hold, 0, len(b.unreleased))
	for hd := range b.unreleased {
		rest = append(rest, hd)
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].AcquireLine < rest[j].AcquireLine })
	for _, hd := range rest {
		fixHold(hd)
		b.busyClient(clientKey{hd.Key, hd.Client}).done(hd, b.ext)
	}
	m.Faults = history.FaultWindows(b.infos, m.End)
	var all []*hold
	for k, km := range b.keys {
		all = append(all, b.lanes(k, km, holdsOf)...)
	}
	for _, km := range b.keys {
		m.Keys = append(m.Keys, km)
	}
	m.HiddenKeys, m.HiddenOver = b.ext.hidden, b.ext.over
	sort.Slice(m.Keys, func(i, j int) bool { return m.Keys[i].Key < m.Keys[j].Key })
	m.placeAnomalies(b.anomalies, all, b.pops)
	return m
}

// procOp is one operation's process, span and first line, for anomalies
// that name processes but no lease.
type procOp struct {
	process   int
	key       string
	call, ret int64
	line      int
}
