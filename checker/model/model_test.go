package model

import (
	"testing"
	"time"

	"github.com/locktorture/locktorture/history"
)

// The model's own tests: its step function and its state hash, one
// transition at a time. The searches are tested on generated histories
// in package checker (linearizable_test.go, ghost_test.go and
// checker_test.go), which has the history builders.

func ms(v float64) int64 { return int64(v * float64(time.Millisecond)) }

// stepStates are the states the step cases start from: lease 1 holding
// the lock from 10 ms under a 100 ms ttl, and the lock free at 10 ms.
func stepStates() (held, free lockState) {
	return lockState{holder: 1, start: ms(10), ttl: ms(100), now: ms(10)}, lockState{now: ms(10)}
}

// The lease-mutex specification, one transition at a time. Times are ms;
// every lease has a 100 ms ttl. Lease 1 holds the lock from 10 ms (its
// lease may expire from 109 ms, the 1 ms allowance included) unless the
// case starts free.
func TestStepLock(t *testing.T) {
	held, free := stepStates()
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

// The relaxed search's exceptions: what only an acquire of unknown outcome
// left out of it could explain.
func TestStepLockRelaxed(t *testing.T) {
	held, free := stepStates()
	type in = lockInput
	cases := []struct {
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
	for _, tc := range cases {
		t.Run("relaxed: "+tc.name, func(t *testing.T) {
			tc.in.mode = modeRelaxed
			if ok, _ := stepLock(tc.from, &tc.in); ok != tc.ok {
				t.Fatalf("legal = %v, want %v", ok, tc.ok)
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
