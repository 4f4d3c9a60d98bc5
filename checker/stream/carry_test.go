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
	// o sizes the windows; zero: the stream's defaults (a few TTLs).
	o Options
}

// carryCases are the cases of TestStreamCarriesState.
func carryCases() []carryCase {
	return []carryCase{
		{name: "holder paused across many windows", build: func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1)
			b.Read(1, 1, 2, 900, 0) // paused mid-hold for 90 TTLs
			b.Acquire(2, 2, "b", 300, 301)
			b.Release(2, 2, "b", 302, 303, true)
			b.Release(1, 1, "a", 901, 902, false)
		}, kind: checker.KindDoubleHolder, class: checker.ClassLeaseOutlived},
		{name: "lease without TTL", build: func(b *histgen.Builder) {
			b.AcquireTTL(1, 1, "a", 0, 0, 1, history.OK)
			b.Acquire(2, 2, "b", 500, 501) // the key could not have expired
			b.Release(2, 2, "b", 502, 503, true)
		}, kind: checker.KindDoubleHolder, class: checker.ClassWithinLease},
		{name: "counter written rarely", build: func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Hold(1, 1, 2, 3, 0, 1).Release(1, 1, "a", 4, 5, true)
			// 60 TTLs later another holder read a stale 0.
			b.Acquire(2, 2, "b", 600, 601).Write(2, 2, 602, 603, 1, 2).Release(2, 2, "b", 604, 605, true)
		}, kind: checker.KindLostUpdate},
		{name: "fencing token handed out long ago", build: func(b *histgen.Builder) {
			b.Add(histgen.Spec{Client: 1, Proc: 1, Op: history.Acquire, Key: "lock:0", Lease: "a", TTL: 10, Call: histgen.MS(0), Ret: histgen.MS(1), Status: history.OK})
			b.Events[len(b.Events)-1].Fence = 5
			b.Release(1, 1, "a", 2, 3, true)
			b.Add(histgen.Spec{Client: 2, Proc: 2, Op: history.Acquire, Key: "lock:0", Lease: "b", TTL: 10, Call: histgen.MS(700), Ret: histgen.MS(701), Status: history.OK})
			b.Events[len(b.Events)-1].Fence = 3
			b.Release(2, 2, "b", 702, 703, true)
		}, kind: checker.KindFenceRegression},
		// A key left without TTL by a crash inside the protocol refuses
		// everyone to the end: one stretch across every window, reported
		// once and whole, and no failure inside it reported apart.
		{name: "key stuck to the end", build: func(b *histgen.Builder) {
			b.AcquireUnknown(1, 1, "a", 0, 1).Crash(1, 1, 1)
			for t := 2.0; t < 995; t += 6 {
				b.AcquireFail(2, 2, t, t+5)
			}
		}, kind: checker.KindStuckLock},
		// A lock that is not reentrant: the holder's nested acquire waits
		// for its own key until the outer lease runs out, then takes it
		// under a token of its own and holds it for 13 TTLs. The others,
		// refused all along, were refused a held key.
		{name: "nested acquire took the key afresh", build: func(b *histgen.Builder) {
			selfDeadlock(b)
		}},
		// Once that nested lease is deleted the key is free, and an
		// acquire that keeps finding it so for two TTLs and failing is
		// spurious.
		{name: "key free after the nested lease", build: func(b *histgen.Builder) {
			selfDeadlock(b)
			b.AcquireFail(3, 3, 160, 180).Tried(histgen.Every(160, 180, 5)...)
		}, kind: checker.KindSpuriousFailure},
		// A lock that renews its key unseen (a library's own goroutine):
		// no refresh in the history, the holder keeps the key for 14
		// TTLs, and the others were refused a held key all along.
		{name: "lease renewed unseen across many windows", build: func(b *histgen.Builder) {
			b.Run.RenewsUnseen = true
			b.Acquire(1, 1, "a", 0, 1).ReleaseUnknown(1, 1, "a", 140, 141)
			b.AcquireFail(2, 2, 20, 148).Tried(histgen.Every(20, 148, 5)...)
		}},
		// What a lock claims of its own key (lease-claims) is judged
		// where the release or refresh returns, on the leases that may
		// have been in the key since long before.
		{name: "release long after its lease ran out says it deleted", build: func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1)
			b.Read(1, 1, 2, 600, 0) // paused for 60 TTLs
			b.Release(1, 1, "a", 601, 602, true)
		}, kind: checker.KindPhantomRelease},
		{name: "refresh long after its lease ran out, another lease renewed", build: func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1)
			b.Acquire(2, 2, "b", 20, 21)
			for at := 25.0; at < 300; at += 5 {
				b.Refresh(2, 20, "b", at, at+0.5, history.OK)
			}
			// The watchdog's renewal as the holder lets go: its
			// validity, had it been true, falls after the overlap.
			b.Refresh(1, 10, "a", 250, 251, history.OK)
			b.Release(1, 1, "a", 250.5, 251.5, false)
			b.Release(2, 2, "b", 300, 301, true)
		}, kind: checker.KindPhantomRenewal},
		{name: "release of a lease without ttl deletes nothing, 50 TTLs on", build: func(b *histgen.Builder) {
			b.AcquireTTL(1, 1, "a", 0, 0, 1, history.OK)
			b.Read(1, 1, 2, 500, 0)
			b.Release(1, 1, "a", 501, 502, false)
		}, kind: checker.KindFailedRelease},
		// Client 1's lease lives a second, and the windows are 40 ms.
		{name: "live lease's release deletes nothing, judged 50 windows on", build: func(b *histgen.Builder) {
			b.AcquireTTL(1, 1, "a", 1000, 0, 1, history.OK)
			b.Read(1, 1, 2, 500, 0)
			b.Release(1, 1, "a", 501, 502, false)
		}, kind: checker.KindFailedRelease, o: Options{Reach: histgen.Dur(40)}},
		// A retried release of client 2's old lease, of unknown outcome,
		// may have deleted client 1's key (a plain DEL) long before
		// client 1's release found nothing: no failed release. (An
		// owner-aware mutex allows no such thing.) The window that judges
		// that release must still see the retry.
		{name: "another release may have deleted the key long before", build: func(b *histgen.Builder) {
			b.Acquire(2, 2, "b", 0, 1).Release(2, 2, "b", 2, 3, true)
			b.AcquireTTL(1, 1, "a", 1000, 5, 6, history.OK)
			b.ReleaseUnknown(2, 2, "b", 100, 101)
			b.Read(1, 1, 7, 800, 0)
			b.Release(1, 1, "a", 801, 802, false)
		}, kind: checker.KindNonlinearizable, o: Options{Reach: histgen.Dur(40)}},
		// Lease m may still have been in the key when client 1's release,
		// spanning the cut at 80 ms, was called at 79 ms: no phantom
		// release, although m had surely run out by the cut.
		{name: "lease alive at a release's call runs out before the cut it spans", build: func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1)
			b.AcquireTTL(2, 2, "m", 72, 5, 6.5, history.OK).Crash(2, 2, 10)
			b.Read(1, 1, 2, 78, 0)
			b.Release(1, 1, "a", 79, 85, true)
		}, kind: checker.KindDoubleHolder, class: checker.ClassWithinLease, o: Options{Reach: histgen.Dur(40)}},
		// Client 2's watchdog renewal, running when client 1's release
		// deleted the key, may have written it first (a renewal that
		// re-creates it); the window that judges the release is checked
		// while the renewal still runs (past the window's reach) and
		// sees it hidden.
		{name: "renewal still running when a release says it deleted", build: func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1)
			b.Acquire(2, 2, "b", 20, 21)
			b.Read(1, 1, 2, 78, 0)
			b.Refresh(2, 20, "b", 78, 200, history.Fail)
			b.Release(1, 1, "a", 79, 80.5, true)
			b.Release(2, 2, "b", 300, 301, false)
		}, kind: checker.KindDoubleHolder, class: checker.ClassLeaseOutlived},
		// Legal: client 2's acquire, given up on at 15 ms while Redis
		// was paused, may have run when it came back at 390 ms and held
		// the key for a TTL: client 1's release at 400 ms may have
		// deleted that key (a plain DEL). Its lease is kept that long.
		{name: "acquire of unknown outcome held up by a fault", build: func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1)
			b.Fault("pause-redis", 2, 390)
			b.AcquireUnknown(2, 2, "u", 5, 15)
			b.Read(1, 1, 2, 399, 0)
			b.Release(1, 1, "a", 400, 401, true)
		}},
		// A legal history: the release ran at once but its reply came 30
		// TTLs later, long after the next holder came and went; a window
		// cut while it was in flight must not take the lease for held.
		{name: "release reply later than the next holder", build: func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1)
			b.Release(1, 1, "a", 2, 300, true)
			b.Acquire(2, 2, "b", 5, 6)
			b.Release(2, 2, "b", 7, 8, true)
		}},
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
	got, s := streamReportMax(t, h, tc.o)
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

// A holder paused past its lease while the others take the key one after
// another: its release, when it comes back, deletes nothing and is no
// failed release, and the windows keep nothing of the others' holds for
// it (they would, for a release that could still be judged one: see
// Stream.pending).
func TestStreamKeepsNothingForAPausedHolder(t *testing.T) {
	b := histgen.NewBuilder(t, 1000)
	b.Acquire(0, 0, "a", 0, 0.01)
	b.Read(0, 0, 0.02, 1500, 0) // paused for 1.5 TTLs
	at := 1001.0
	for i := range 10000 {
		c := 1 + i%3
		lease := fmt.Sprint("l", i)
		b.Acquire(c, c, lease, at, at+0.01)
		b.Release(c, c, lease, at+0.02, at+0.03, true)
		at += 0.04
	}
	b.Release(0, 0, "a", 1501, 1502, false)
	h := b.Build()
	want := checker.Compose(mustSelect(t)...).Report(context.Background(), h)
	got, s := streamReportMax(t, h, Options{MaxEvents: 200})
	if !sameTally(tally(got), tally(want)) || tally(want)["failed-release/"] != 0 {
		t.Fatalf("stream %s %v, whole %s %v", got.Verdict, tally(got), want.Verdict, tally(want))
	}
	if s.maxOps > 400 {
		t.Fatalf("a window of 200 own events held %d operations (the history has %d)", s.maxOps, len(h.Events)/2)
	}
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
