package checker

import (
	"context"
	"testing"

	"github.com/locktorture/locktorture/checker/internal/histgen"
	"github.com/locktorture/locktorture/history"
)

// claimCase is a history for lease-claims, on a TTL of 100 ms, and the one
// anomaly it must report (nil: none of its kinds).
type claimCase struct {
	name  string
	build func(b *histgen.Builder)
	want  *want
}

// TestLeaseClaims runs lease-claims on each history of its tables: the case
// each kind is for, and the near ones it must leave alone.
func TestLeaseClaims(t *testing.T) {
	for table, cases := range map[string][]claimCase{
		"phantom-release": phantomReleaseCases(),
		"phantom-renewal": phantomRenewalCases(),
		"failed-release":  failedReleaseCases(),
	} {
		for _, tc := range cases {
			t.Run(table+"/"+tc.name, func(t *testing.T) {
				b := histgen.NewBuilder(t, 100)
				tc.build(b)
				r := LeaseClaims().Check(context.Background(), b.Build())
				if tc.want == nil {
					if r.Verdict != Valid {
						t.Fatalf("verdict %s: %s", r.Verdict, dump(r.Anomalies))
					}
					return
				}
				checkAnomaly(t, r, *tc.want)
			})
		}
	}
}

// phantomReleaseCases: a release that says it deleted a key its lease had
// surely lost, with nothing else there.
func phantomReleaseCases() []claimCase {
	return []claimCase{
		{"release long after the lease ran out, key free", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 150, 151, true)
		}, &want{kind: KindPhantomRelease, clients: []int{1}, keys: []string{"lock:0"}, leases: []string{"a"},
			start: histgen.MS(150), end: histgen.MS(151),
			detail: []string{"client 1's release of lease a reported deleting lock:0 between 0.150s and 0.151s",
				"could have lived only until 0.101s", "nothing of its own to delete"}}},
		{"release just past the expiry margin", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 102.1, 103, true)
		}, &want{kind: KindPhantomRelease, clients: []int{1}, keys: []string{"lock:0"}, anyTimes: true}},
		{"release just before expiry", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 100.5, 101.5, true)
		}, nil},
		{"release within the expiry margin", func(b *histgen.Builder) {
			// Redis stamps expiries in milliseconds: the key may be
			// seen up to a millisecond past its ttl.
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 101.9, 103, true)
		}, nil},
		{"a refresh kept the lease alive", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Refresh(1, 10, "a", 80, 81, history.OK).Release(1, 1, "a", 150, 151, true)
		}, nil},
		{"a refresh that failed may have extended a minority of masters", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Refresh(1, 10, "a", 80, 81, history.Fail).Release(1, 1, "a", 150, 151, true)
		}, nil},
		{"expired, but another lease alive: foreign-release's", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Acquire(2, 2, "b", 110, 120)
			b.Release(1, 1, "a", 150, 151, true).Release(2, 2, "b", 160, 161, false)
		}, nil},
		{"expired, another lease ran out too", func(b *histgen.Builder) {
			b.AcquireTTL(2, 2, "b", 10, 110, 111, history.OK)
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 150, 151, true)
		}, &want{kind: KindPhantomRelease, clients: []int{1}, keys: []string{"lock:0"}, anyTimes: true}},
		{"an acquire of unknown outcome may have written the key", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).AcquireUnknown(2, 2, "u", 110, 120).Release(1, 1, "a", 150, 151, true)
		}, nil},
		{"an acquire was running (a Redlock's failed one writes a minority)", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).AcquireFail(2, 2, 140, 160).Release(1, 1, "a", 150, 151, true)
		}, nil},
		{"an acquire that failed before the release", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).AcquireFail(2, 2, 110, 120).Release(1, 1, "a", 150, 151, true)
		}, &want{kind: KindPhantomRelease, clients: []int{1}, keys: []string{"lock:0"}, anyTimes: true}},
		{"a lease without ttl never surely runs out", func(b *histgen.Builder) {
			b.AcquireTTL(1, 1, "a", 0, 0, 1, history.OK).Release(1, 1, "a", 150, 151, true)
		}, nil},
		{"a lock that renews unseen", func(b *histgen.Builder) {
			b.Run.RenewsUnseen = true
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 150, 151, true)
		}, nil},
		{"the owner's nested acquire renewed the key", func(b *histgen.Builder) {
			b.Acquire(1, 1, "o#1/1", 0, 1).NestedAcquire(1, 1, "o", "o#1/2", 90, 91)
			b.NestedRelease(1, 1, "o#1/2", 92, 93, false).Release(1, 1, "o#1/1", 150, 151, true)
		}, nil},
	}
}

// phantomRenewalCases: a refresh that says it extended a lease that had
// surely run out, while another client's lease may have been alive.
func phantomRenewalCases() []claimCase {
	return []claimCase{
		{"refresh after expiry, another client holds the key", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Acquire(2, 2, "b", 110, 120)
			b.Refresh(1, 10, "a", 150, 151, history.OK)
			b.Release(1, 1, "a", 160, 161, false).Release(2, 2, "b", 170, 171, true)
		}, &want{kind: KindPhantomRenewal, clients: []int{1, 2}, keys: []string{"lock:0"}, leases: []string{"a", "b"},
			start: histgen.MS(150), end: histgen.MS(151),
			detail: []string{"client 1's refresh of lease a reported extending lock:0 between 0.150s and 0.151s",
				"could have lived only until 0.101s", "client 2 held the key since 0.120s under lease b, which could have lived until 0.171s",
				"overwrote a live lease"}}},
		{"refresh before expiry", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Refresh(1, 10, "a", 90, 91, history.OK).Acquire(2, 2, "b", 110, 120)
			b.Refresh(1, 10, "a", 150, 151, history.OK)
			b.Release(1, 1, "a", 160, 161, false).Release(2, 2, "b", 170, 171, true)
		}, nil},
		{"refresh after expiry with the key free", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Refresh(1, 10, "a", 150, 151, history.OK).Release(1, 1, "a", 160, 161, true)
		}, nil},
		{"the other lease had run out too", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Acquire(2, 2, "b", 110, 120)
			b.Refresh(1, 10, "a", 250, 251, history.OK)
			b.Release(1, 1, "a", 260, 261, false).Release(2, 2, "b", 270, 271, false)
		}, nil},
		{"the other holder had let go", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Acquire(2, 2, "b", 110, 120).Release(2, 2, "b", 130, 131, true)
			b.Refresh(1, 10, "a", 150, 151, history.OK).Release(1, 1, "a", 160, 161, false)
		}, nil},
		{"the other lease is the same client's", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Acquire(1, 3, "b", 110, 120)
			b.Refresh(1, 10, "a", 150, 151, history.OK)
			b.Release(1, 1, "a", 160, 161, false).Release(1, 3, "b", 170, 171, true)
		}, nil},
		{"refresh after its holder let go", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 2, 3, true).Acquire(2, 2, "b", 110, 120)
			b.Refresh(1, 10, "a", 150, 151, history.OK).Release(2, 2, "b", 170, 171, true)
		}, nil},
		{"a refresh of unknown outcome may have kept it", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Refresh(1, 10, "a", 60, 70, history.Unknown).Acquire(2, 2, "b", 110, 120)
			b.Refresh(1, 11, "a", 150, 151, history.OK)
			b.Release(1, 1, "a", 160, 161, false).Release(2, 2, "b", 170, 171, true)
		}, nil},
	}
}

// failedReleaseCases: a release of a surely live lease of the releaser's
// own that says it deleted nothing.
func failedReleaseCases() []claimCase {
	return []claimCase{
		{"live lease, nothing deleted, a waiter waits it out", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 50, 51, false)
			b.AcquireFail(2, 2, 40, 90).Acquire(2, 2, "b", 91, 101).Release(2, 2, "b", 110, 111, true)
		}, &want{kind: KindFailedRelease, clients: []int{1}, keys: []string{"lock:0"}, leases: []string{"a"},
			start: histgen.MS(50), end: histgen.MS(51),
			detail: []string{"client 1's release of lease a deleted nothing between 0.050s and 0.051s",
				"acquired at 0.000s, could not expire before 0.100s", "every waiter waited it out"}}},
		{"a refresh moved the earliest expiry", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Refresh(1, 10, "a", 80, 81, history.OK).Release(1, 1, "a", 150, 151, false)
		}, &want{kind: KindFailedRelease, clients: []int{1}, keys: []string{"lock:0"}, anyTimes: true,
			detail: []string{"could not expire before 0.180s"}}},
		{"a lease without ttl never expires", func(b *histgen.Builder) {
			b.AcquireTTL(1, 1, "a", 0, 0, 1, history.OK).Release(1, 1, "a", 150, 151, false)
		}, &want{kind: KindFailedRelease, clients: []int{1}, keys: []string{"lock:0"}, anyTimes: true,
			detail: []string{"could never expire"}}},
		{"a fault before the acquire", func(b *histgen.Builder) {
			b.Fault("pause-redis", 5, 15)
			b.Acquire(1, 1, "a", 20, 21).Release(1, 1, "a", 50, 51, false)
		}, &want{kind: KindFailedRelease, clients: []int{1}, keys: []string{"lock:0"}, anyTimes: true}},
		{"not deleted after expiry", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 150, 151, false)
		}, nil},
		{"returned within the expiry margin", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 98, 99.5, false)
		}, nil},
		{"during a fault window", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Fault("pause-redis", 20, 30).Release(1, 1, "a", 50, 51, false)
		}, nil},
		{"a fault never healed", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 50, 51, false)
			b.Events = append(b.Events, history.Event{Time: histgen.MS(30), Type: history.Info, Op: history.FaultStart, Fault: "restart-empty", Target: "redis-0"})
		}, nil},
		{"after a master switch", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 50, 51, false)
			b.Events = append(b.Events, history.Event{Time: histgen.MS(25), Type: history.Info, Op: history.MasterSwitch, Target: "redis-1"})
		}, nil},
		{"after another client's deleting release", func(b *histgen.Builder) {
			// Client 2's late plain DEL (a foreign release) took client
			// 1's key.
			b.AcquireTTL(2, 2, "b", 10, 0, 1, history.OK).Acquire(1, 1, "a", 20, 21)
			b.Release(2, 2, "b", 30, 31, true).Release(1, 1, "a", 50, 51, false)
		}, nil},
		{"after another client's release of unknown outcome", func(b *histgen.Builder) {
			b.AcquireTTL(2, 2, "b", 10, 0, 1, history.OK).Acquire(1, 1, "a", 20, 21)
			b.ReleaseUnknown(2, 2, "b", 30, 31).Release(1, 1, "a", 50, 51, false)
		}, nil},
		{"another release still running", func(b *histgen.Builder) {
			b.AcquireTTL(2, 2, "b", 10, 0, 1, history.OK).Acquire(1, 1, "a", 20, 21)
			b.Release(2, 2, "b", 30, 60, false).Release(1, 1, "a", 50, 51, false)
		}, nil},
		{"another client's release that deleted nothing", func(b *histgen.Builder) {
			b.AcquireTTL(2, 2, "b", 10, 0, 1, history.OK).Acquire(1, 1, "a", 20, 21)
			b.Release(2, 2, "b", 30, 31, false).Release(1, 1, "a", 50, 51, false)
		}, &want{kind: KindFailedRelease, clients: []int{1}, keys: []string{"lock:0"}, anyTimes: true}},
		{"another client was granted the key", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Acquire(2, 2, "b", 20, 21)
			b.Release(1, 1, "a", 50, 51, false).Release(2, 2, "b", 60, 61, true)
		}, nil},
		{"nested release of a reentrant lock", func(b *histgen.Builder) {
			b.Acquire(1, 1, "o#1/1", 0, 1).NestedAcquire(1, 1, "o", "o#1/2", 2, 3)
			b.NestedRelease(1, 1, "o#1/2", 4, 5, false).Release(1, 1, "o#1/1", 6, 7, true)
		}, nil},
		{"reentrant release that leaves a count", func(b *histgen.Builder) {
			b.Acquire(1, 1, "o#1/2", 0, 1)
			b.Add(histgen.Spec{Client: 1, Proc: 1, Op: history.Release, Key: "lock:0", Lease: "o#1/2",
				Call: histgen.MS(50), Ret: histgen.MS(51), Status: history.OK, Deleted: history.Bool(false), Value: histgen.I64(1)})
		}, nil},
		{"the lease lapsed before a renewal that says it found it", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Refresh(1, 10, "a", 150, 151, history.OK).Release(1, 1, "a", 160, 161, false)
		}, nil},
		{"an acquire of unknown outcome", func(b *histgen.Builder) {
			b.AcquireUnknown(1, 1, "a", 0, 1).Release(1, 1, "a", 50, 51, false)
		}, nil},
	}
}

// The new kinds are registered with the built-in checkers, failed-release
// as liveness, so that a matrix cell may expect them and --fail-on safety
// lets a failed release through.
func TestLeaseClaimsEntry(t *testing.T) {
	e, err := Builtin().Get("lease-claims")
	if err != nil {
		t.Fatal(err)
	}
	if !e.Always {
		t.Error("lease-claims is not run on every history")
	}
	for _, k := range []Kind{KindPhantomRelease, KindPhantomRenewal, KindFailedRelease} {
		if _, ok := e.Kinds[k]; !ok {
			t.Errorf("entry does not declare %s", k)
		}
	}
	if len(e.Liveness) != 1 || e.Liveness[0] != KindFailedRelease || SeverityOf(KindFailedRelease) != SeverityLiveness {
		t.Errorf("failed-release is not liveness: %v, %s", e.Liveness, SeverityOf(KindFailedRelease))
	}
	if SeverityOf(KindPhantomRelease) != SeveritySafety || SeverityOf(KindPhantomRenewal) != SeveritySafety {
		t.Error("phantom releases and renewals are not safety")
	}
}
