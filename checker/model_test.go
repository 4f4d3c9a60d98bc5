package checker

import (
	"context"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// The lease-mutex specification, one transition at a time. Times are ms;
// every lease has a 100 ms ttl. Lease 1 holds the lock from 10 ms (its
// lease may expire from 109 ms, the 1 ms allowance included) unless the
// case starts free.
func TestStepLock(t *testing.T) {
	held := lockState{holder: 1, start: ms(10), ttl: ms(100), now: ms(10)}
	free := lockState{now: ms(10)}
	type in = lockInput
	cases := []struct {
		name    string
		from    lockState
		in      in
		lenient bool
		ok      bool
		want    lockState
	}{
		{"acquire a free lock", free, in{kind: kAcquire, status: history.OK, lease: 2, call: ms(20), ret: ms(21), ttl: ms(100)}, false, true,
			lockState{holder: 2, start: ms(20), ttl: ms(100), now: ms(20)}},
		{"acquire within the holder's lease", held, in{kind: kAcquire, status: history.OK, lease: 2, call: ms(20), ret: ms(30), ttl: ms(100)}, false, false, held},
		{"acquire once the holder may have expired", held, in{kind: kAcquire, status: history.OK, lease: 2, call: ms(20), ret: ms(115), ttl: ms(100)}, false, true,
			lockState{holder: 2, start: ms(109), ttl: ms(100), now: ms(109)}},
		{"a lease without ttl never expires", lockState{holder: 1, start: ms(10), now: ms(10)}, in{kind: kAcquire, status: history.OK, lease: 2, call: ms(20), ret: ms(5000)}, false, false,
			lockState{holder: 1, start: ms(10), now: ms(10)}},
		{"nothing follows an operation that took effect after it returned", lockState{holder: 2, start: ms(109), ttl: ms(100), now: ms(109)},
			in{kind: kRelease, status: history.OK, deleted: true, lease: 2, call: ms(50), ret: ms(60)}, false, false, held},
		{"a failed acquire changes nothing", held, in{kind: kAcquire, status: history.Fail, lease: 2, call: ms(20), ret: ms(30)}, false, true, held},
		{"the lease starts no earlier than now", lockState{now: ms(50)}, in{kind: kAcquire, status: history.OK, lease: 2, call: ms(20), ret: ms(60), ttl: ms(100)}, false, true,
			lockState{holder: 2, start: ms(50), ttl: ms(100), now: ms(50)}},
		{"unknown acquire takes effect when it can", free, in{kind: kAcquire, status: history.Unknown, lease: 2, call: ms(20), ret: history.Never, ttl: ms(100)}, false, true,
			lockState{holder: 2, start: ms(20), ttl: ms(100), now: ms(20)}},
		{"unknown acquire waits out a lease", held, in{kind: kAcquire, status: history.Unknown, lease: 2, call: ms(20), ret: history.Never, ttl: ms(100)}, false, true,
			lockState{holder: 2, start: ms(109), ttl: ms(100), now: ms(109)}},
		{"unknown acquire cannot happen here (exact)", held, in{kind: kAcquire, status: history.Unknown, lease: 2, call: ms(20), ret: ms(30), ttl: ms(100)}, false, false, held},
		{"unknown acquire did not happen here (lenient)", held, in{kind: kAcquire, status: history.Unknown, lease: 2, call: ms(20), ret: ms(30), ttl: ms(100)}, true, true, held},
		{"release of one's own lock", held, in{kind: kRelease, status: history.OK, deleted: true, lease: 1, call: ms(50), ret: ms(51)}, false, true,
			lockState{now: ms(50)}},
		{"release deleting another's live lock", held, in{kind: kRelease, status: history.OK, deleted: true, lease: 2, call: ms(50), ret: ms(51)}, false, false, held},
		{"release deleting another's lock that may have expired", held, in{kind: kRelease, status: history.OK, deleted: true, lease: 2, call: ms(50), ret: ms(120)}, false, true,
			lockState{now: ms(109)}},
		{"release deleting a key that is not there", free, in{kind: kRelease, status: history.OK, deleted: true, lease: 2, call: ms(50), ret: ms(51)}, false, false, free},
		{"release finding another's lock deletes nothing", held, in{kind: kRelease, status: history.OK, lease: 2, call: ms(50), ret: ms(51)}, false, true,
			lockState{holder: 1, start: ms(10), ttl: ms(100), now: ms(50)}},
		{"release finding its own live lock gone", held, in{kind: kRelease, status: history.OK, lease: 1, call: ms(50), ret: ms(51)}, false, false, held},
		{"release finding its own expired lock gone", held, in{kind: kRelease, status: history.OK, lease: 1, call: ms(150), ret: ms(151)}, false, true,
			lockState{now: ms(150)}},
		{"unknown release of one's own lock", held, in{kind: kRelease, status: history.Unknown, lease: 1, call: ms(50), ret: history.Never}, false, true,
			lockState{now: ms(50)}},
		{"unknown release of another's lock (exact)", held, in{kind: kRelease, status: history.Unknown, lease: 2, call: ms(50), ret: history.Never}, false, false, held},
		{"refresh moves the lease start", held, in{kind: kRefresh, status: history.OK, lease: 1, call: ms(80), ret: ms(81), ttl: ms(100)}, false, true,
			lockState{holder: 1, start: ms(80), ttl: ms(100), now: ms(80)}},
		{"refresh of a lease that does not hold", held, in{kind: kRefresh, status: history.OK, lease: 2, call: ms(80), ret: ms(81)}, false, false, held},
		{"refresh failing on a live lease", held, in{kind: kRefresh, status: history.Fail, lease: 1, call: ms(80), ret: ms(81)}, false, false, held},
		{"refresh failing on an expired lease", held, in{kind: kRefresh, status: history.Fail, lease: 1, call: ms(120), ret: ms(121)}, false, true,
			lockState{now: ms(120)}},
		{"refresh failing on another's lease", held, in{kind: kRefresh, status: history.Fail, lease: 2, call: ms(80), ret: ms(81)}, false, true,
			lockState{holder: 1, start: ms(10), ttl: ms(100), now: ms(80)}},
	}
	relaxed := []struct {
		name string
		from lockState
		in   in
		ok   bool
	}{
		{"release deleting an orphan key", free, in{kind: kRelease, status: history.OK, deleted: true, lease: 2, call: ms(50), ret: ms(51), orphanFrom: ms(5)}, true},
		{"release deleting a key before any orphan", free, in{kind: kRelease, status: history.OK, deleted: true, lease: 2, call: ms(50), ret: ms(51), orphanFrom: ms(60)}, false},
		{"release of an orphan lease deleting it", free, in{kind: kRelease, status: history.OK, deleted: true, lease: 2, orphan: true, call: ms(50), ret: ms(51), orphanFrom: history.Never}, true},
		{"release deleting another's live lock all the same", held, in{kind: kRelease, status: history.OK, deleted: true, lease: 2, call: ms(50), ret: ms(51), orphanFrom: ms(5)}, false},
		{"refresh of an orphan lease where the lock was free", free, in{kind: kRefresh, status: history.OK, lease: 2, orphan: true, call: ms(50), ret: ms(51)}, true},
		{"refresh of an orphan lease under a live lease", held, in{kind: kRefresh, status: history.OK, lease: 2, orphan: true, call: ms(50), ret: ms(51)}, false},
	}
	for _, tc := range relaxed {
		t.Run("relaxed: "+tc.name, func(t *testing.T) {
			tc.in.mode = modeRelaxed
			if ok, _ := stepLock(tc.from, &tc.in); ok != tc.ok {
				t.Fatalf("legal = %v, want %v", ok, tc.ok)
			}
		})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.mode = modeExact
			if tc.lenient {
				tc.in.mode = modeBounded
			}
			ok, got := stepLock(tc.from, &tc.in)
			if ok != tc.ok {
				t.Fatalf("legal = %v, want %v", ok, tc.ok)
			}
			if ok && got != tc.want {
				t.Fatalf("state %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Porcupine's cache needs equal states to hash alike, and the bucketing
// needs different ones to mostly differ.
func TestHashState(t *testing.T) {
	a := lockState{holder: 3, start: 10, ttl: 100, now: 12, applied: 5}
	b := a
	if hashState(a) != hashState(b) {
		t.Fatal("equal states hash differently")
	}
	seen := map[uint64]bool{}
	for i := range 1000 {
		s := a
		s.now += int64(i)
		seen[hashState(s)] = true
	}
	if len(seen) < 1000 {
		t.Fatalf("%d distinct hashes of 1000 states", len(seen))
	}
}

// A command sent before its client gave up may run much later (a paused
// Redis executes what sat in its socket buffer when it resumes). The fast
// search assumes it ran within the horizon and finds no legal order; the
// exact one must then find the order in which it ran late.
func TestExactSearchAfterBoundedFails(t *testing.T) {
	b := newBuilder(t, 100)
	// Client 1's SET times out; client 2 acquires and releases; much later
	// client 1's new process deletes the key its lost SET wrote, which
	// is only possible if that SET ran after client 2's release.
	b.acquireUnknown(1, 1, "u", 0, 10)
	b.acquire(2, 2, "x", 150, 151).release(2, 2, "x", 160, 161, true)
	b.release(1, 3, "u", 300, 301, true)
	h := b.build()
	r := Linearizable(LinearizableOptions{}).Check(context.Background(), h)
	if r.Verdict != Valid || r.Stats["relaxed_searches"] != 1 || r.Stats["exact_searches"] != 1 {
		t.Fatalf("verdict %s: %s", r.Verdict, dump(r))
	}
	r = Linearizable(LinearizableOptions{UnknownHorizon: dur(1000)}).Check(context.Background(), h)
	if r.Verdict != Valid || r.Stats["exact_searches"] != 0 {
		t.Fatalf("with a 1 s horizon the fast search should do: %s", dump(r))
	}
	// Without the lost SET, the same release deleted a key nobody had.
	b = newBuilder(t, 100)
	b.acquire(2, 2, "x", 150, 151).release(2, 2, "x", 160, 161, true)
	b.release(1, 3, "u", 300, 301, true)
	r = Linearizable(LinearizableOptions{}).Check(context.Background(), b.build())
	checkAnomaly(t, r, want{kind: KindNonlinearizable, clients: []int{1}, keys: []string{"lock:0"}, start: ms(300), end: ms(301),
		detail: []string{"client 1's release of lease u (ok, deleted the key, 0.300s to 0.301s)", "the lock was then free"}})
}

// A SET stuck behind a paused Redis runs when the pause ends: the fast
// search allows for that when the history records the fault.
func TestBoundedSearchWaitsForHeal(t *testing.T) {
	build := func(withFault bool) *history.History {
		b := newBuilder(t, 100)
		b.acquireUnknown(1, 1, "u", 0, 10)
		b.acquire(2, 2, "x", 150, 151).release(2, 2, "x", 160, 161, true)
		b.release(1, 3, "u", 450, 451, true)
		if withFault {
			b.fault("pause", 5, 400)
		}
		return b.build()
	}
	r := Linearizable(LinearizableOptions{}).Check(context.Background(), build(true))
	if r.Verdict != Valid || r.Stats["relaxed_searches"] != 0 {
		t.Fatalf("with the pause recorded, the bounded search should do: %s", dump(r))
	}
	r = Linearizable(LinearizableOptions{}).Check(context.Background(), build(false))
	if r.Verdict != Valid || r.Stats["exact_searches"] != 1 {
		t.Fatalf("without it, the exact search must decide: %s", dump(r))
	}
}
