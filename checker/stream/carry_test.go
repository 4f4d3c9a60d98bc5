package stream

import (
	"context"
	"fmt"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/checker/internal/histgen"
	"github.com/locktorture/locktorture/history"
)

// What a lease does not bound, carried across the cuts between windows;
// and the memory a long run keeps.

// filler adds a client that takes and frees lock:1 every 10 ms from 0 to
// until, so that the stream moves through many windows (of 40 ms with a
// 10 ms TTL) while the case under test plays on lock:0.
func filler(b *histgen.Builder, until float64) {
	n := 0
	for t := 0.0; t < until; t += 10 {
		n++
		lease := fmt.Sprintf("f%d", n)
		b.Add(histgen.Spec{Client: 7, Proc: 70, Op: history.Acquire, Key: "lock:1", Lease: lease, TTL: b.Run.TTLMillis,
			Call: histgen.MS(t), Ret: histgen.MS(t + 1), Status: history.OK})
		b.Add(histgen.Spec{Client: 7, Proc: 70, Op: history.Release, Key: "lock:1", Lease: lease,
			Call: histgen.MS(t + 2), Ret: histgen.MS(t + 3), Status: history.OK, Deleted: history.Bool(true)})
	}
}

// selfDeadlock is a holder's nested acquire of a watchdog lock that is not
// reentrant, on a TTL of 10 ms: it waits for its own key until the outer
// lease "a" runs out at 11 ms, takes the key as "b", renews it every 5 ms
// and releases both at 150 ms, while client 2 tries to acquire and is
// refused.
func selfDeadlock(b *histgen.Builder) {
	b.Acquire(1, 1, "a", 0, 1)
	b.NestedAcquire(1, 1, "a", "b", 1, 11.5)
	for at := 15.0; at < 150; at += 5 {
		b.Refresh(1, 1, "b", at, at+0.5, history.OK)
	}
	b.NestedRelease(1, 1, "b", 150, 150.5, true)
	b.Release(1, 1, "a", 151, 151.5, false)
	b.AcquireFail(2, 2, 20, 140).Tried(histgen.Every(20, 140, 5)...)
}

// What a lease does not bound must survive the cuts between windows: a
// holder paused far longer than a window, a lease without TTL, the counter
// of a key written rarely, the fencing token handed out long ago. Each case
// is a history the whole-history check finds broken; the stream, cutting
// it into windows a few TTLs long, must find the same anomaly, once.
func TestStreamCarriesState(t *testing.T) {
	for _, tc := range carryCases() {
		t.Run(tc.name, func(t *testing.T) { carries(t, tc) })
	}
}

// carryCase is a history the stream must judge as the whole check does,
// and the one anomaly both must find (none for a legal history).
type carryCase struct {
	name  string
	build func(b *histgen.Builder)
	kind  checker.Kind
	class checker.Class
}

// carryCases are the cases of TestStreamCarriesState.
func carryCases() []carryCase {
	return []carryCase{
		{"holder paused across many windows", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1)
			b.Read(1, 1, 2, 900, 0) // paused mid-hold for 90 TTLs
			b.Acquire(2, 2, "b", 300, 301)
			b.Release(2, 2, "b", 302, 303, true)
			b.Release(1, 1, "a", 901, 902, false)
		}, checker.KindDoubleHolder, checker.ClassLeaseOutlived},
		{"lease without TTL", func(b *histgen.Builder) {
			b.AcquireTTL(1, 1, "a", 0, 0, 1, history.OK)
			b.Acquire(2, 2, "b", 500, 501) // the key could not have expired
			b.Release(2, 2, "b", 502, 503, true)
		}, checker.KindDoubleHolder, checker.ClassWithinLease},
		{"counter written rarely", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Hold(1, 1, 2, 3, 0, 1).Release(1, 1, "a", 4, 5, true)
			// 60 TTLs later another holder read a stale 0.
			b.Acquire(2, 2, "b", 600, 601).Write(2, 2, 602, 603, 1, 2).Release(2, 2, "b", 604, 605, true)
		}, checker.KindLostUpdate, ""},
		{"fencing token handed out long ago", func(b *histgen.Builder) {
			b.Add(histgen.Spec{Client: 1, Proc: 1, Op: history.Acquire, Key: "lock:0", Lease: "a", TTL: 10, Call: histgen.MS(0), Ret: histgen.MS(1), Status: history.OK})
			b.Events[len(b.Events)-1].Fence = 5
			b.Release(1, 1, "a", 2, 3, true)
			b.Add(histgen.Spec{Client: 2, Proc: 2, Op: history.Acquire, Key: "lock:0", Lease: "b", TTL: 10, Call: histgen.MS(700), Ret: histgen.MS(701), Status: history.OK})
			b.Events[len(b.Events)-1].Fence = 3
			b.Release(2, 2, "b", 702, 703, true)
		}, checker.KindFenceRegression, ""},
		// A key left without TTL by a crash inside the protocol refuses
		// everyone to the end: one stretch across every window, reported
		// once and whole, and no failure inside it reported apart.
		{"key stuck to the end", func(b *histgen.Builder) {
			b.AcquireUnknown(1, 1, "a", 0, 1).Crash(1, 1, 1)
			for t := 2.0; t < 995; t += 6 {
				b.AcquireFail(2, 2, t, t+5)
			}
		}, checker.KindStuckLock, ""},
		// A lock that is not reentrant: the holder's nested acquire waits
		// for its own key until the outer lease runs out, then takes it
		// under a token of its own and holds it for 13 TTLs. The others,
		// refused all along, were refused a held key.
		{"nested acquire took the key afresh", func(b *histgen.Builder) {
			selfDeadlock(b)
		}, "", ""},
		// Once that nested lease is deleted the key is free, and an
		// acquire that keeps finding it so for two TTLs and failing is
		// spurious.
		{"key free after the nested lease", func(b *histgen.Builder) {
			selfDeadlock(b)
			b.AcquireFail(3, 3, 160, 180).Tried(histgen.Every(160, 180, 5)...)
		}, checker.KindSpuriousFailure, ""},
		// A lock that renews its key unseen (a library's own goroutine):
		// no refresh in the history, the holder keeps the key for 14
		// TTLs, and the others were refused a held key all along.
		{"lease renewed unseen across many windows", func(b *histgen.Builder) {
			b.Run.RenewsUnseen = true
			b.Acquire(1, 1, "a", 0, 1).ReleaseUnknown(1, 1, "a", 140, 141)
			b.AcquireFail(2, 2, 20, 148).Tried(histgen.Every(20, 148, 5)...)
		}, "", ""},
		// A legal history: the release ran at once but its reply came 30
		// TTLs later, long after the next holder came and went; a window
		// cut while it was in flight must not take the lease for held.
		{"release reply later than the next holder", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1)
			b.Release(1, 1, "a", 2, 300, true)
			b.Acquire(2, 2, "b", 5, 6)
			b.Release(2, 2, "b", 7, 8, true)
		}, "", ""},
	}
}

// carries checks tc's history, with a filler that moves the stream
// through many windows, whole and through a stream, and compares.
func carries(t *testing.T, tc carryCase) {
	b := histgen.NewBuilder(t, 10)
	tc.build(b)
	filler(b, 1000)
	h := b.Build()
	whole := checker.Compose(mustSelect(t)...).Report(context.Background(), h)
	got, s := streamReport(t, h, 0, 0, 0, nil)
	if s.nWindows < 10 {
		t.Fatalf("only %d windows: the case does not span cuts", s.nWindows)
	}
	for name, r := range map[string]checker.Report{"whole": whole, "stream": got} {
		if tc.kind == "" {
			if r.Verdict != checker.Valid {
				t.Errorf("%s check of a legal history: %s %s", name, r.Verdict, startTimes(r))
			}
			continue
		}
		n := 0
		for _, a := range r.Anomalies {
			if a.Kind == tc.kind && a.Class == tc.class {
				n++
			}
		}
		if tc.kind == checker.KindStuckLock && r.Count[checker.KindSpuriousFailure] > 0 {
			t.Errorf("%s check: failures inside the stuck stretch reported apart: %s", name, startTimes(r))
		}
		if n != 1 || r.Verdict != checker.Invalid {
			t.Errorf("%s check: %s, %d %s/%s anomalies, want 1: %s", name, r.Verdict, n, tc.kind, tc.class, startTimes(r))
		}
	}
	if !sameTally(tally(got), tally(whole)) {
		t.Errorf("stream %v, whole %v", tally(got), tally(whole))
	}
	if w, g := spanOf(whole, tc.kind), spanOf(got, tc.kind); w != g {
		t.Errorf("%s: stream found it over %v, the whole check over %v", tc.kind, g, w)
	}
}

// A long legal history is checked with a bounded part of it in memory: the
// largest window holds a small share of its operations however long it
// runs, and each anomaly found reaches OnAnomaly while the history is
// still being fed, not only at the end.
func TestStreamMemoryAndLiveAnomalies(t *testing.T) {
	h := histgen.Mutex(t, histgen.MutexOptions{Clients: 4, Ops: 20000, TTL: 10, Seed: 7, Refresh: true})
	total := int64(len(h.Operations()))
	rep, s := streamReport(t, h, 0, 0, 0, nil)
	if rep.Verdict != checker.Valid {
		t.Fatalf("legal history: %s %s", rep.Verdict, startTimes(rep))
	}
	if s.maxOps*10 > total {
		t.Fatalf("the largest window held %d of %d operations", s.maxOps, total)
	}

	h = histgen.Mutex(t, histgen.MutexOptions{Clients: 4, Ops: 20000, TTL: 10, Seed: 7, Violate: 0.01})
	var live []checker.Anomaly
	var s2 *Stream
	s2, err := New(checker.Builtin(), nil, checker.MutexOptions{MaxAnomalies: -1}, Options{OnAnomaly: func(a checker.Anomaly) { live = append(live, a) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s2.Add(ctx, history.Event{Type: history.Info, Op: history.RunOp, Run: h.Run})
	half := len(h.Events) / 2
	for _, e := range h.Events[:half] {
		s2.Add(ctx, e)
	}
	before := len(live)
	if n, safety := s2.Found(); before == 0 || n != int64(before) || safety == 0 {
		t.Fatalf("after half the history: %d anomalies reported live, Found %d/%d", before, n, safety)
	}
	for _, e := range h.Events[half:] {
		s2.Add(ctx, e)
	}
	final := s2.Close(ctx)
	if len(live) != len(final.Anomalies) || final.Verdict != checker.Invalid {
		t.Fatalf("%d anomalies reported live, %d in the verdict (%s)", len(live), len(final.Anomalies), final.Verdict)
	}
}

// Nested acquires name their owner, the same string for as long as the
// process lives: what the stream keeps of them goes with the outer
// acquisition they enter, not with that name, or it would grow with the
// run (a 300 s run of the reentrant lock kept 723k operations in a window,
// over 1 GB, and stalled the harness). A TTL of a few hundred operations
// keeps each owner busy on each key, as at full speed.
func TestStreamMemoryReentrant(t *testing.T) {
	for _, wl := range []string{"reentrant", "reentrant-token"} {
		t.Run(wl, func(t *testing.T) {
			// Four times as long a run: the largest window no larger.
			var most [2]int64
			for i, ops := range []int{10000, 40000} {
				h := histgen.Workload(t, histgen.WorkloadOptions{Workload: wl, Clients: 4, Ops: ops, TTL: 100, Seed: 7})
				_, s := streamReportMax(t, h, Options{})
				most[i] = s.maxOps
			}
			if most[1] > most[0]*3/2 {
				t.Fatalf("the largest window held %d operations of a run of 10000, %d of one of 40000", most[0], most[1])
			}
		})
	}
}

// spanOf is the first anomaly of kind's span and detail.
func spanOf(r checker.Report, kind checker.Kind) string {
	for _, a := range r.Anomalies {
		if a.Kind == kind {
			return fmt.Sprintf("%d..%d: %s", a.StartNS, a.EndNS, a.Detail)
		}
	}
	return ""
}

// At full speed a TTL holds many windows' worth of events. What a window
// keeps of a busy key's past is what the lease rules keep (leases that may
// still be alive, what a later-judged acquire saw), not a TTL of it: 10k
// holds taken one after another inside one TTL are checked in windows of
// about their own part, and a double holder near the end is still found as
// the whole-history check finds it.
func TestStreamKeepsNoTTLOfFinishedHolds(t *testing.T) {
	b := histgen.NewBuilder(t, 1000)
	at := b.Turns(10000, 1, 0.04)
	// Client 0 takes the key, and client 1 is granted it within that lease.
	b.Acquire(0, 0, "x", at, at+0.01)
	b.Acquire(1, 1, "y", at+0.1, at+0.11)
	b.Release(1, 1, "y", at+0.2, at+0.21, true)
	b.Release(0, 0, "x", at+0.3, at+0.31, false)
	h := b.Build()
	want := checker.Compose(mustSelect(t)...).Report(context.Background(), h)
	got, s := streamReportMax(t, h, Options{MaxEvents: 200})
	if got.Verdict != checker.Invalid || !sameTally(tally(got), tally(want)) {
		t.Fatalf("stream %s %v, whole %s %v", got.Verdict, tally(got), want.Verdict, tally(want))
	}
	if tally(got)["double-holder/within-lease"] == 0 {
		t.Fatalf("no double holder within the lease: %v", tally(got))
	}
	if s.maxOps > 400 {
		t.Fatalf("a window of 200 own events held %d operations (the history has %d)", s.maxOps, len(h.Events)/2)
	}
}

// A failed acquire on a busy key is judged where it returns, in a window
// that no longer holds the key's finished holds: one that tried while the
// last hold was on is no spurious failure, one that tried on the freed key
// is, in windows of every size as in the whole-history check.
func TestStreamKeepsWhatAFailedAcquireSaw(t *testing.T) {
	for _, free := range []float64{-15, 1, 5, 10, 50} {
		b := histgen.NewBuilder(t, 100)
		at := b.Turns(2000, 1, 0.04)
		b.Acquire(0, 0, "last", at, at+0.01)
		b.Release(0, 0, "last", at+20, at+20.01, true)
		call := at + 20 + free
		b.AcquireFail(5, 5, call, call+10).Tried([2]float64{call, call + 1}, [2]float64{call + 9, call + 10})
		b.Acquire(6, 6, "z", at+80, at+81)
		b.Release(6, 6, "z", at+82, at+83, true)
		h := b.Build()
		want := checker.Compose(mustSelect(t)...).Report(context.Background(), h)
		if spurious := tally(want)["spurious-failure/"] > 0; spurious != (free > 0) {
			t.Fatalf("attempt %v ms after the release: the whole check says %v", free, tally(want))
		}
		for _, max := range []int{40, 200} {
			got, _ := streamReportMax(t, h, Options{MaxEvents: max})
			if !sameTally(tally(got), tally(want)) {
				t.Fatalf("attempt %v ms after the release, windows of %d events: stream %v, whole %v", free, max, tally(got), tally(want))
			}
		}
	}
}
