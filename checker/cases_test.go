package checker

import (
	"testing"

	"github.com/locktorture/locktorture/checker/internal/histgen"
	"github.com/locktorture/locktorture/history"
)

// The histories of TestLegalHistoriesPass and TestAnomaliesAreFlagged, kept
// apart from the tests so that each table reads as one list.

// legalCase is a history a correct lock can produce.
type legalCase struct {
	name  string
	build func(b *histgen.Builder)
}

// legalCases are the histories no checker may flag: clean holds, renewed
// leases, expiries, unknown outcomes either way, late and nested releases.
func legalCases() []legalCase {
	return []legalCase{
		{"clean sequential mutex", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Hold(1, 1, 2, 10, 0, 1).Release(1, 1, "a", 11, 12, true)
			b.Acquire(2, 2, "b", 5, 13).Hold(2, 2, 14, 20, 1, 2).Release(2, 2, "b", 21, 22, true)
			b.AcquireFail(3, 3, 6, 19)
			b.Acquire(3, 3, "c", 20, 23).Hold(3, 3, 24, 30, 2, 3).Release(3, 3, "c", 31, 32, true)
			b.Acquire(1, 1, "d", 33, 34).Hold(1, 1, 35, 40, 3, 4).Release(1, 1, "d", 41, 42, true)
		}},
		{"refreshes extend a lease past its ttl", func(b *histgen.Builder) {
			// ttl 100 ms; the holder works 250 ms with a watchdog
			// renewing every 30 ms, while client 2 waits.
			b.Acquire(1, 1, "a", 0, 1).Read(1, 1, 2, 3, 0)
			for at := 30.0; at < 250; at += 30 {
				b.Refresh(1, 10, "a", at, at+1, history.OK)
			}
			b.AcquireFail(2, 2, 5, 105).AcquireFail(2, 2, 106, 206)
			b.Write(1, 1, 249, 250, 1, 1).Release(1, 1, "a", 251, 252, true)
			b.Refresh(1, 10, "a", 260, 261, history.Fail)
			b.Acquire(2, 2, "b", 207, 253).Hold(2, 2, 254, 260, 1, 2).Release(2, 2, "b", 262, 263, true)
		}},
		{"a lease expires, then another client acquires", func(b *histgen.Builder) {
			// Client 1 crashes holding the lock; its key expires at 100 ms
			// and client 2, waiting since 10 ms, gets it at 120 ms.
			b.Acquire(1, 1, "a", 0, 1).Read(1, 1, 2, 3, 0).Crash(1, 1, 20)
			b.Acquire(2, 2, "b", 10, 120).Hold(2, 2, 121, 130, 0, 1).Release(2, 2, "b", 131, 132, true)
		}},
		{"an unknown acquire that may not have happened", func(b *histgen.Builder) {
			// The reply to client 1's SET was lost. Had it landed, client 2
			// could not have acquired at 61 ms; it may just as well not.
			b.AcquireUnknown(1, 1, "u", 0, 50)
			b.Acquire(2, 2, "b", 60, 61).Hold(2, 2, 62, 70, 0, 1).Release(2, 2, "b", 71, 72, true)
			b.Acquire(1, 3, "c", 80, 81).Hold(1, 3, 82, 90, 1, 2).Release(1, 3, "c", 91, 92, true)
		}},
		{"an unknown acquire that must have happened", func(b *histgen.Builder) {
			// Here it did land: client 2 is refused until it expires.
			b.AcquireUnknown(1, 1, "u", 0, 50)
			b.AcquireFail(2, 2, 55, 70)
			b.Acquire(2, 2, "b", 71, 160).Hold(2, 2, 161, 170, 0, 1).Release(2, 2, "b", 171, 172, true)
		}},
		{"an unknown release that did happen", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Hold(1, 1, 2, 10, 0, 1).ReleaseUnknown(1, 1, "a", 11, 40)
			b.Acquire(2, 2, "b", 5, 13).Hold(2, 2, 14, 20, 1, 2).Release(2, 2, "b", 21, 22, true)
		}},
		{"a late release deletes nothing", func(b *histgen.Builder) {
			// A token lock: the holder's release after its key expired and
			// was taken finds someone else's token and deletes nothing.
			// (Mutual exclusion is broken here, but that is not for the
			// lock-protocol checkers to judge.)
			b.Acquire(1, 1, "a", 0, 1).Acquire(2, 2, "b", 5, 120)
			b.Release(1, 1, "a", 150, 151, false).Release(2, 2, "b", 160, 161, true)
		}},
		{"a reentrant count one off ends with its release", func(b *histgen.Builder) {
			// A retried increment made the outer acquire report depth 2;
			// the owner releases that acquisition at depth 1 and the
			// next client takes the key: one holder at a time.
			b.Acquire(1, 1, "o#1/2", 0, 1).NestedAcquire(1, 1, "o", "o#1/3", 2, 3)
			b.NestedRelease(1, 1, "o#1/3", 4, 5, false).Release(1, 1, "o#1/1", 6, 7, true)
			b.Acquire(2, 2, "p#2/1", 8, 9).Release(2, 2, "p#2/1", 10, 11, true)
		}},
	}
}

// anomalyCase is a history with one anomaly, the checker that must find it
// and what it must say.
type anomalyCase struct {
	name    string
	checker Checker
	build   func(t *testing.T) *history.History
	want    want
}

// anomalyCases are every checker's anomalies, one history each.
func anomalyCases() []anomalyCase {
	return append(holderAnomalyCases(), livenessAndModelAnomalyCases()...)
}

// holderAnomalyCases are the anomalies of two holders: at once, within the
// lease or after it, and a release of the other's key.
func holderAnomalyCases() []anomalyCase {
	return []anomalyCase{
		{"double holder within the lease", MutualExclusion(), func(t *testing.T) *history.History {
			// The lock grants client 2 a lease while client 1's is in force.
			b := histgen.NewBuilder(t, 1000)
			b.Acquire(1, 1, "a", 0, 1).Acquire(2, 2, "b", 100, 101)
			b.Release(1, 1, "a", 200, 201, true).Release(2, 2, "b", 300, 301, false)
			return b.Build()
		}, want{kind: KindDoubleHolder, class: ClassWithinLease, clients: []int{1, 2}, keys: []string{"lock:0"},
			leases: []string{"a", "b"}, start: histgen.MS(101), end: histgen.MS(200),
			detail: []string{"clients 1 and 2 both held lock:0 from 0.101s to 0.200s", "both leases were in force from 0.101s to 0.200s"}}},
		{"double holder after the lease ran out", MutualExclusion(), func(t *testing.T) *history.History {
			b := histgen.NewBuilder(t, 100)
			b.Acquire(1, 1, "a", 0, 1).Acquire(2, 2, "b", 150, 151)
			b.Release(1, 1, "a", 200, 201, false).Release(2, 2, "b", 300, 301, true)
			return b.Build()
		}, want{kind: KindDoubleHolder, class: ClassLeaseOutlived, clients: []int{1, 2}, keys: []string{"lock:0"},
			start: histgen.MS(151), end: histgen.MS(200),
			detail: []string{"clients 1 and 2 both held lock:0 from 0.151s to 0.200s", "client 1's lease had expired at 0.100s"}}},
		{"refreshed lease is still in force", MutualExclusion(), func(t *testing.T) *history.History {
			// Client 1's watchdog renewed at 80 ms, so when the lock let
			// client 2 in at 150 ms, client 1's lease was still valid.
			b := histgen.NewBuilder(t, 100)
			b.Acquire(1, 1, "a", 0, 1).Refresh(1, 10, "a", 80, 81, history.OK).Acquire(2, 2, "b", 150, 151)
			b.Release(1, 1, "a", 170, 171, true).Release(2, 2, "b", 300, 301, false)
			return b.Build()
		}, want{kind: KindDoubleHolder, class: ClassWithinLease, clients: []int{1, 2}, keys: []string{"lock:0"},
			start: histgen.MS(151), end: histgen.MS(170), detail: []string{"both leases were in force from 0.151s to 0.170s"}}},
		{"foreign release", ForeignRelease(), secondConfusion,
			want{kind: KindForeignRelease, clients: []int{1, 2}, keys: []string{"lock:0"}, leases: []string{"a", "b"},
				start: histgen.MS(150), end: histgen.MS(151),
				detail: []string{"client 1's release of lease a deleted lock:0 between 0.150s and 0.151s, while client 2 held it since 0.120s", "until 0.220s"}}},
	}
}

// livenessAndModelAnomalyCases are a stuck lock, a spurious failure, a lost
// update and histories no lease mutex could produce.
func livenessAndModelAnomalyCases() []anomalyCase {
	return []anomalyCase{
		{"stuck lock", Liveness(LivenessOptions{}), func(t *testing.T) *history.History {
			// SETNX without expiry: client 1 dies holding the key; clients
			// 2 and 3 time out waiting, again and again.
			b := histgen.NewBuilder(t, 100)
			b.AcquireTTL(1, 1, "a", 0, 0, 1, history.OK).Read(1, 1, 2, 3, 0).Crash(1, 1, 10)
			for _, c := range []int{2, 3} {
				for at := float64(c); at < 400; at += 101 {
					b.AcquireFail(c, c, at, at+100)
				}
			}
			return b.Build()
		}, want{kind: KindStuckLock, clients: []int{1, 2, 3}, keys: []string{"lock:0"}, start: histgen.MS(10), end: histgen.MS(406),
			detail: []string{"no acquire of lock:0 succeeded from 0.010s to the end of the history at 0.406s", "client 1 last acquired it at 0.001s (lease a) and crashed at 0.010s without releasing it"}}},
		{"spurious failure", Liveness(LivenessOptions{}), func(t *testing.T) *history.History {
			// Client 2's SET NX landed but its reply was lost; go-redis
			// retried, found the key (its own) and reported "not acquired".
			// Nobody's lease was alive while it tried.
			b := histgen.NewBuilder(t, 100)
			b.Acquire(1, 1, "a", 0, 1).Hold(1, 1, 2, 10, 0, 1).Release(1, 1, "a", 20, 21, true)
			b.AcquireFail(2, 2, 30, 130).AcquireFail(3, 3, 131, 135)
			return b.Build()
		}, want{kind: KindSpuriousFailure, clients: []int{2}, keys: []string{"lock:0"}, start: histgen.MS(30), end: histgen.MS(130),
			detail: []string{"client 2's acquire of lock:0 (0.030s to 0.130s) failed although no lease could have been alive from 0.030s to 0.130s"}}},
		{"lost update", LostUpdate(), func(t *testing.T) *history.History {
			b := histgen.NewBuilder(t, 40)
			b.Acquire(1, 1, "a", 0, 1).Read(1, 1, 2, 3, 0)
			b.Acquire(2, 2, "b", 50, 51).Read(2, 2, 52, 53, 0)
			b.Write(1, 1, 60, 61, 1, 1).Release(1, 1, "a", 62, 63, false)
			b.Write(2, 2, 64, 65, 1, 2).Release(2, 2, "b", 66, 67, true)
			return b.Build()
		}, want{kind: KindLostUpdate, clients: []int{2, 1}, keys: []string{"lock:0"}, start: histgen.MS(60), end: histgen.MS(65),
			detail: []string{"client 2 wrote 1 to lock:0 at 0.065s (write 2) over client 1's 1 written at 0.061s (write 1): both read 0, so client 1's update was lost"}}},
		{"nonlinearizable: a live lock deleted", Linearizable(LinearizableOptions{}), secondConfusion,
			want{kind: KindNonlinearizable, clients: []int{1, 2}, keys: []string{"lock:0"}, start: histgen.MS(150), end: histgen.MS(151),
				leases: []string{"a", "b"},
				detail: []string{"client 1's release of lease a (ok, deleted the key, 0.150s to 0.151s)", "held by client 2 (lease b, written no earlier than 0.099s"}}},
		{"nonlinearizable: granted within another's lease", Linearizable(LinearizableOptions{SegmentOps: 1}), func(t *testing.T) *history.History {
			b := histgen.NewBuilder(t, 1000)
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 2, 3, true)
			b.Acquire(1, 1, "b", 4, 5).Acquire(2, 2, "c", 100, 101)
			return b.Build()
		}, want{kind: KindNonlinearizable, clients: []int{2, 1}, keys: []string{"lock:0"}, start: histgen.MS(100), end: histgen.MS(101),
			detail: []string{"client 2's acquire of lease c", "held by client 1 (lease b, written no earlier than 0.004s"}}},
	}
}

// secondConfusion is the seed's story: client 1's work outlives its ttl,
// client 2 acquires after the key expired, client 1's plain DEL deletes
// client 2's key, and client 3 walks in while client 2 still works.
func secondConfusion(t *testing.T) *history.History {
	b := histgen.NewBuilder(t, 100)
	b.Acquire(1, 1, "a", 0, 1).Read(1, 1, 2, 3, 0)
	b.Acquire(2, 2, "b", 10, 120).Read(2, 2, 121, 122, 0)
	b.Write(1, 1, 140, 141, 1, 1).Release(1, 1, "a", 150, 151, true)
	b.Acquire(3, 3, "c", 130, 152).Read(3, 3, 153, 154, 1)
	b.Write(2, 2, 190, 191, 1, 2).Release(2, 2, "b", 200, 201, false)
	b.Write(3, 3, 205, 206, 2, 3).Release(3, 3, "c", 210, 211, true)
	return b.Build()
}
