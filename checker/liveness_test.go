package checker

import (
	"context"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker/internal/histgen"
)

// livenessCase is one history of TestLivenessJudgesAttempts and the
// anomalies the liveness checker must find in it.
type livenessCase struct {
	name  string
	build func(b *histgen.Builder)
	want  map[Kind]int
	// detail, if set, is part of the one anomaly's detail.
	detail string
}

// Liveness is judged only on time a client was looking at the lock: its
// attempts as the wire saw them, and what a lock held while refusing.
func TestLivenessJudgesAttempts(t *testing.T) {
	cases := append(stallLivenessCases(), leaseLivenessCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := histgen.NewBuilder(t, 100)
			tc.build(b)
			r := Liveness(LivenessOptions{}).Check(context.Background(), b.Build())
			if len(r.Count) != len(tc.want) {
				t.Fatalf("counts %v, want %v: %s", r.Count, tc.want, dump(r))
			}
			for k, n := range tc.want {
				if r.Count[k] != n {
					t.Fatalf("%s: %d, want %d: %s", k, r.Count[k], n, dump(r))
				}
			}
			if tc.detail != "" && !strings.Contains(r.Anomalies[0].Detail, tc.detail) {
				t.Errorf("detail %q lacks %q", r.Anomalies[0].Detail, tc.detail)
			}
		})
	}
}

// stallLivenessCases are attempts around harness stalls, timed-out
// acquires and a key nobody could take.
func stallLivenessCases() []livenessCase {
	return []livenessCase{
		{"harness stall after the last attempt is no spurious failure", func(b *histgen.Builder) {
			// Client 2 tried twice while client 1 held the key, then the
			// harness stalled and the acquire returned long after the
			// key was free: it never looked while it was free.
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 20, 21, true)
			var tries [][2]float64
			for at := 5.0; at < 20; at += 2 {
				tries = append(tries, [2]float64{at, at + 0.5})
			}
			b.AcquireFail(2, 2, 5, 160).Tried(tries...)
		}, nil, ""},
		{"an attempt that found the key free is a spurious failure", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 20, 21, true)
			b.AcquireFail(2, 2, 5, 160).Tried([2]float64{5, 6}, [2]float64{15, 16}, [2]float64{40, 41})
		}, map[Kind]int{KindSpuriousFailure: 1}, "no lease could have been alive from 0.021s to 0.160s"},
		{"harness stall of every client is no stuck lock", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 30, 31, true)
			for _, c := range []int{2, 3} {
				b.AcquireFail(c, c, 20, 500).Tried([2]float64{20, 21}, [2]float64{25, 26})
			}
		}, nil, ""},
		{"timed-out acquires may hold the key: no stuck lock", func(b *histgen.Builder) {
			// The path to Redis is too slow: every acquire times out, and
			// any of them may have written the key for a ttl after it.
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 10, 11, true)
			for at, p := 20.0, 10; at < 800; at, p = at+60, p+1 {
				b.AcquireUnknown(2, p, "", at, at+50)
			}
		}, nil, ""},
		{"a key a timed-out acquire may hold expires: then stuck", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 10, 11, true)
			b.AcquireUnknown(2, 2, "", 20, 70)
			var tries [][2]float64
			for at := 200.0; at < 1000; at += 50 {
				tries = append(tries, [2]float64{at, at + 1})
			}
			for _, c := range []int{3, 4} {
				b.AcquireFail(c, c, 200, 1000).Tried(tries...)
			}
		}, map[Kind]int{KindStuckLock: 1, KindSpuriousFailure: 2}, "no acquire of lock:0 succeeded from 0.200s"},
		// A stuck stretch early on says nothing of a quick failure long
		// after it, when the key was free again.
		{"a quick failure far from a stuck stretch is spurious", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 10, 11, true)
			b.AcquireUnknown(2, 2, "", 20, 70)
			for _, c := range []int{3, 4} {
				b.AcquireFail(c, c, 200, 1000).Tried(histgen.Every(200, 1000, 50)...)
			}
			b.Acquire(5, 5, "e", 1100, 1101).Release(5, 5, "e", 1110, 1111, true)
			b.AcquireFail(6, 6, 1200, 1200.5).Tried([2]float64{1200, 1200.3})
			b.Acquire(5, 5, "f", 1400, 1401)
		}, map[Kind]int{KindStuckLock: 1, KindSpuriousFailure: 3}, ""},
	}
}

// leaseLivenessCases are attempts against leases the history shows only
// in part: renewed where the harness cannot see it, or refused late.
func leaseLivenessCases() []livenessCase {
	return []livenessCase{
		// The lock extends its keys where the harness cannot see it: no
		// refresh in the history, yet the holder's key lived as long as
		// the holder kept it, and a TTL after it let go.
		{"a lease renewed unseen is alive while held", func(b *histgen.Builder) {
			b.Run.RenewsUnseen = true
			b.Acquire(1, 1, "a", 0, 1).ReleaseUnknown(1, 1, "a", 300, 301)
			b.AcquireFail(2, 2, 20, 390).Tried(histgen.Every(20, 390, 5)...)
		}, nil, ""},
		{"a lease renewed unseen is over a TTL after its release", func(b *histgen.Builder) {
			b.Run.RenewsUnseen = true
			b.Acquire(1, 1, "a", 0, 1).ReleaseUnknown(1, 1, "a", 300, 301)
			b.AcquireFail(2, 2, 360, 500).Tried(histgen.Every(360, 500, 5)...)
		}, map[Kind]int{KindSpuriousFailure: 1}, "no lease could have been alive from 0.400s to 0.500s"},
		{"without unseen renewal the same lease is over a TTL after its acquire", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).ReleaseUnknown(1, 1, "a", 300, 301)
			b.AcquireFail(2, 2, 20, 290).Tried(histgen.Every(20, 290, 5)...)
		}, map[Kind]int{KindSpuriousFailure: 1}, "no lease could have been alive from 0.101s to 0.290s"},
		{"a lease refused late held the key for the others", func(b *histgen.Builder) {
			b.Run.TTLMillis = 200
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 10, 11, true)
			// Client 3's write landed at 20 ms, its reply came too late,
			// its lock refused the lease and deleted the key at 290 ms.
			b.AcquireFail(3, 3, 12, 300).Tried([2]float64{12, 260}, [2]float64{270, 290}).HeldAnyway(20, 290)
			var tries [][2]float64
			for at := 30.0; at < 230; at += 20 {
				tries = append(tries, [2]float64{at, at + 1})
			}
			b.AcquireFail(2, 2, 30, 230).Tried(tries...)
		}, nil, ""},
	}
}

// Every anomaly says whether it breaks safety or liveness, the report
// counts both, and a gate on safety alone passes a liveness-only history.
func TestSeverityAndGate(t *testing.T) {
	b := histgen.NewBuilder(t, 100)
	b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 20, 21, true)
	b.AcquireFail(2, 2, 5, 160).Tried([2]float64{40, 41})
	live := ForMutex(MutexOptions{}).Report(context.Background(), b.Build())
	safe := ForMutex(MutexOptions{}).Report(context.Background(), secondConfusion(t))
	cases := []struct {
		name                string
		rep                 Report
		safety, liveness    int
		gateAll, gateSafety Verdict
	}{
		{"liveness only", live, 0, 1, Invalid, Valid},
		{"safety", safe, safe.Severity[SeveritySafety], 0, Invalid, Invalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.rep.Severity[SeveritySafety] != tc.safety || tc.rep.Severity[SeverityLiveness] != tc.liveness {
				t.Errorf("severity counts %v, want safety %d liveness %d", tc.rep.Severity, tc.safety, tc.liveness)
			}
			for _, a := range tc.rep.Anomalies {
				if a.Severity != SeverityOf(a.Kind) || a.Severity == "" {
					t.Errorf("%s classed %q", a.Kind, a.Severity)
				}
			}
			if g := tc.rep.Gate(FailOnAll); g != tc.gateAll {
				t.Errorf("gate all: %s, want %s", g, tc.gateAll)
			}
			if g := tc.rep.Gate(FailOnSafety); g != tc.gateSafety {
				t.Errorf("gate safety: %s, want %s", g, tc.gateSafety)
			}
		})
	}
	if safe.Severity[SeveritySafety] == 0 {
		t.Fatal("the second confusion has no safety anomaly")
	}
	for _, s := range []string{"", "all", "safety", "liveness"} {
		_, err := ParseFailOn(s)
		if (err != nil) != (s == "liveness") {
			t.Errorf("ParseFailOn(%q): %v", s, err)
		}
	}
}
