package checker

import (
	"context"
	"fmt"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// filler adds a client that takes and frees lock:1 every 10 ms from 0 to
// until, so that the stream moves through many windows (of 40 ms with a
// 10 ms TTL) while the case under test plays on lock:0.
func filler(b *builder, until float64) {
	n := 0
	for t := 0.0; t < until; t += 10 {
		n++
		lease := fmt.Sprintf("f%d", n)
		b.add(spec{client: 7, proc: 70, op: history.Acquire, key: "lock:1", lease: lease, ttl: b.run.TTLMillis,
			call: ms(t), ret: ms(t + 1), status: history.OK})
		b.add(spec{client: 7, proc: 70, op: history.Release, key: "lock:1", lease: lease,
			call: ms(t + 2), ret: ms(t + 3), status: history.OK, deleted: history.Bool(true)})
	}
}

// selfDeadlock is a holder's nested acquire of a watchdog lock that is not
// reentrant, on a TTL of 10 ms: it waits for its own key until the outer
// lease "a" runs out at 11 ms, takes the key as "b", renews it every 5 ms
// and releases both at 150 ms, while client 2 tries to acquire and is
// refused.
func selfDeadlock(b *builder) {
	b.acquire(1, 1, "a", 0, 1)
	b.nestedAcquire(1, 1, "a", "b", 1, 11.5)
	for at := 15.0; at < 150; at += 5 {
		b.refresh(1, 1, "b", at, at+0.5, history.OK)
	}
	b.nestedRelease(1, 1, "b", 150, 150.5, true)
	b.release(1, 1, "a", 151, 151.5, false)
	b.acquireFail(2, 2, 20, 140).tried(every(20, 140, 5)...)
}

// every lists attempts of half a millisecond every step ms from from to to.
func every(from, to, step float64) [][2]float64 {
	var out [][2]float64
	for at := from; at+0.5 <= to; at += step {
		out = append(out, [2]float64{at, at + 0.5})
	}
	return out
}

// What a lease does not bound must survive the cuts between windows: a
// holder paused far longer than a window, a lease without TTL, the counter
// of a key written rarely, the fencing token handed out long ago. Each case
// is a history the whole-history check finds broken; the stream, cutting
// it into windows a few TTLs long, must find the same anomaly, once.
func TestStreamCarriesState(t *testing.T) {
	cases := []struct {
		name  string
		build func(b *builder)
		kind  Kind
		class Class
	}{
		{"holder paused across many windows", func(b *builder) {
			b.acquire(1, 1, "a", 0, 1)
			b.read(1, 1, 2, 900, 0) // paused mid-hold for 90 TTLs
			b.acquire(2, 2, "b", 300, 301)
			b.release(2, 2, "b", 302, 303, true)
			b.release(1, 1, "a", 901, 902, false)
		}, KindDoubleHolder, ClassLeaseOutlived},
		{"lease without TTL", func(b *builder) {
			b.acquireTTL(1, 1, "a", 0, 0, 1, history.OK)
			b.acquire(2, 2, "b", 500, 501) // the key could not have expired
			b.release(2, 2, "b", 502, 503, true)
		}, KindDoubleHolder, ClassWithinLease},
		{"counter written rarely", func(b *builder) {
			b.acquire(1, 1, "a", 0, 1).hold(1, 1, 2, 3, 0, 1).release(1, 1, "a", 4, 5, true)
			// 60 TTLs later another holder read a stale 0.
			b.acquire(2, 2, "b", 600, 601).write(2, 2, 602, 603, 1, 2).release(2, 2, "b", 604, 605, true)
		}, KindLostUpdate, ""},
		{"fencing token handed out long ago", func(b *builder) {
			b.add(spec{client: 1, proc: 1, op: history.Acquire, key: "lock:0", lease: "a", ttl: 10, call: ms(0), ret: ms(1), status: history.OK})
			b.events[len(b.events)-1].Fence = 5
			b.release(1, 1, "a", 2, 3, true)
			b.add(spec{client: 2, proc: 2, op: history.Acquire, key: "lock:0", lease: "b", ttl: 10, call: ms(700), ret: ms(701), status: history.OK})
			b.events[len(b.events)-1].Fence = 3
			b.release(2, 2, "b", 702, 703, true)
		}, KindFenceRegression, ""},
		// A key left without TTL by a crash inside the protocol refuses
		// everyone to the end: one stretch across every window, reported
		// once and whole, and no failure inside it reported apart.
		{"key stuck to the end", func(b *builder) {
			b.acquireUnknown(1, 1, "a", 0, 1).crash(1, 1, 1)
			for t := 2.0; t < 995; t += 6 {
				b.acquireFail(2, 2, t, t+5)
			}
		}, KindStuckLock, ""},
		// A lock that is not reentrant: the holder's nested acquire waits
		// for its own key until the outer lease runs out, then takes it
		// under a token of its own and holds it for 13 TTLs. The others,
		// refused all along, were refused a held key.
		{"nested acquire took the key afresh", func(b *builder) {
			selfDeadlock(b)
		}, "", ""},
		// Once that nested lease is deleted the key is free, and an
		// acquire that keeps finding it so for two TTLs and failing is
		// spurious.
		{"key free after the nested lease", func(b *builder) {
			selfDeadlock(b)
			b.acquireFail(3, 3, 160, 180).tried(every(160, 180, 5)...)
		}, KindSpuriousFailure, ""},
		// A lock that renews its key unseen (a library's own goroutine):
		// no refresh in the history, the holder keeps the key for 14
		// TTLs, and the others were refused a held key all along.
		{"lease renewed unseen across many windows", func(b *builder) {
			b.run.RenewsUnseen = true
			b.acquire(1, 1, "a", 0, 1).releaseUnknown(1, 1, "a", 140, 141)
			b.acquireFail(2, 2, 20, 148).tried(every(20, 148, 5)...)
		}, "", ""},
		// A legal history: the release ran at once but its reply came 30
		// TTLs later, long after the next holder came and went; a window
		// cut while it was in flight must not take the lease for held.
		{"release reply later than the next holder", func(b *builder) {
			b.acquire(1, 1, "a", 0, 1)
			b.release(1, 1, "a", 2, 300, true)
			b.acquire(2, 2, "b", 5, 6)
			b.release(2, 2, "b", 7, 8, true)
		}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t, 10)
			tc.build(b)
			filler(b, 1000)
			h := b.build()
			whole := Compose(mustSelect(t)...).Report(context.Background(), h)
			got, s := streamReport(t, h, 0, 0, 0, nil)
			if s.nWindows < 10 {
				t.Fatalf("only %d windows: the case does not span cuts", s.nWindows)
			}
			for name, r := range map[string]Report{"whole": whole, "stream": got} {
				if tc.kind == "" {
					if r.Verdict != Valid {
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
				if tc.kind == KindStuckLock && r.Count[KindSpuriousFailure] > 0 {
					t.Errorf("%s check: failures inside the stuck stretch reported apart: %s", name, startTimes(r))
				}
				if n != 1 || r.Verdict != Invalid {
					t.Errorf("%s check: %s, %d %s/%s anomalies, want 1: %s", name, r.Verdict, n, tc.kind, tc.class, startTimes(r))
				}
			}
			if !sameTally(tally(got), tally(whole)) {
				t.Errorf("stream %v, whole %v", tally(got), tally(whole))
			}
			if w, g := spanOf(whole, tc.kind), spanOf(got, tc.kind); w != g {
				t.Errorf("%s: stream found it over %v, the whole check over %v", tc.kind, g, w)
			}
		})
	}
}

// A long legal history is checked with a bounded part of it in memory: the
// largest window holds a small share of its operations however long it
// runs, and each anomaly found reaches OnAnomaly while the history is
// still being fed, not only at the end.
func TestStreamMemoryAndLiveAnomalies(t *testing.T) {
	h := genMutex(t, genOptions{clients: 4, ops: 20000, ttl: 10, seed: 7, refresh: true})
	total := int64(len(h.Operations()))
	rep, s := streamReport(t, h, 0, 0, 0, nil)
	if rep.Verdict != Valid {
		t.Fatalf("legal history: %s %s", rep.Verdict, startTimes(rep))
	}
	if s.maxOps*10 > total {
		t.Fatalf("the largest window held %d of %d operations", s.maxOps, total)
	}

	h = genMutex(t, genOptions{clients: 4, ops: 20000, ttl: 10, seed: 7, violate: 0.01})
	var live []Anomaly
	var s2 *Stream
	s2, err := NewStream(Builtin(), nil, MutexOptions{MaxAnomalies: -1}, StreamOptions{OnAnomaly: func(a Anomaly) { live = append(live, a) }})
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
	if len(live) != len(final.Anomalies) || final.Verdict != Invalid {
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
				h := genWorkload(t, wlOptions{workload: wl, clients: 4, ops: ops, ttl: 100, seed: 7})
				_, s := streamReportMax(t, h, StreamOptions{})
				most[i] = s.maxOps
			}
			if most[1] > most[0]*3/2 {
				t.Fatalf("the largest window held %d operations of a run of 10000, %d of one of 40000", most[0], most[1])
			}
		})
	}
}

// spanOf is the first anomaly of kind's span and detail.
func spanOf(r Report, kind Kind) string {
	for _, a := range r.Anomalies {
		if a.Kind == kind {
			return fmt.Sprintf("%d..%d: %s", a.StartNS, a.EndNS, a.Detail)
		}
	}
	return ""
}
