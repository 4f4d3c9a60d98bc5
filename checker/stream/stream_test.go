package stream

import (
	"context"
	"fmt"
	"math/rand"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/checker/internal/histgen"
	"github.com/locktorture/locktorture/history"
)

// The stream against the whole-history check: the same verdict and the
// same anomalies on generated histories of every shape, cut into windows
// of every size, with counts exact past the list's cap.

// streamReport checks h through a Stream with the given window sizes.
func streamReport(t testing.TB, h *history.History, reach, back, win time.Duration, onAnomaly func(checker.Anomaly)) (checker.Report, *Stream) {
	t.Helper()
	return streamReportMax(t, h, Options{Reach: reach, Back: back, Window: win, OnAnomaly: onAnomaly})
}

// streamReportMax checks h through a Stream with options o.
func streamReportMax(t testing.TB, h *history.History, o Options) (checker.Report, *Stream) {
	t.Helper()
	s, err := New(checker.Builtin(), nil, checker.MutexOptions{MaxAnomalies: -1}, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if h.Run != nil {
		s.Add(ctx, history.Event{Type: history.Info, Op: history.RunOp, Run: h.Run})
	}
	for _, e := range h.Events {
		s.Add(ctx, e)
	}
	return s.Close(ctx), s
}

// tally counts anomalies by kind and class, the part of a verdict that
// windows must reproduce exactly.
func tally(r checker.Report) map[string]int {
	out := map[string]int{}
	for _, a := range r.Anomalies {
		out[string(a.Kind)+"/"+string(a.Class)]++
	}
	return out
}

func sameTally(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// startTimes lists the anomalies' kinds and starts, to show where the two
// checks disagree.
func startTimes(r checker.Report) string {
	var s []string
	for _, a := range r.Anomalies {
		s = append(s, fmt.Sprintf("%s/%s@%s", a.Kind, a.Class, history.FormatTime(a.StartNS)))
	}
	sort.Strings(s)
	return fmt.Sprint(s)
}

// The windowed check must reach the verdict of the whole-history check, and
// find the same anomalies (by kind and class), on generated histories of
// every shape the generator makes: legal ones, lost replies, late SETs,
// overruns, locks that grant twice and locks that misreport what they did
// to their own key, cut into windows much shorter than
// the history (down to about one TTL) so that leases, holds and unknown
// outcomes span many cuts. Under the race detector it runs the first 150
// seeds, enough to race the windows' code; .ci/run runs all 1000 without it.
func TestStreamAgreesWithWholeHistory(t *testing.T) {
	seeds := int64(1000)
	if raceDetector {
		seeds = 150
	}
	var mu sync.Mutex
	verdicts := map[checker.Verdict]int{}
	windows := int64(0)
	// The seeds in as many parts as there are cores, side by side.
	parts := int64(runtime.GOMAXPROCS(0))
	t.Run("seeds", func(t *testing.T) {
		for part := range parts {
			t.Run(fmt.Sprint(part), func(t *testing.T) {
				t.Parallel()
				for seed := 1 + part; seed <= seeds; seed += parts {
					v, n := streamAgreesOn(t, seed)
					mu.Lock()
					verdicts[v]++
					windows += n
					mu.Unlock()
				}
			})
		}
	})
	t.Logf("verdicts %v, %d windows", verdicts, windows)
	if verdicts[checker.Invalid] < 20 || verdicts[checker.Valid] < 20 {
		t.Fatalf("the histories do not exercise both verdicts: %v", verdicts)
	}
}

// streamAgreesOn generates the mutex history of seed, checks it whole and
// through streams of six window shapes, fails t where they disagree, and
// returns the whole check's verdict and the windows the streams cut.
func streamAgreesOn(t *testing.T, seed int64) (checker.Verdict, int64) {
	ctx := context.Background()
	windows := int64(0)
	r := rand.New(rand.NewSource(seed))
	o := histgen.MutexOptions{Clients: 2 + r.Intn(7), Ops: 150 + r.Intn(450), TTL: int64(10 + r.Intn(60)), Seed: seed,
		Unknown: r.Float64() * 0.1, Orphan: r.Float64(), Refresh: r.Intn(2) == 0}
	if r.Intn(3) == 0 {
		o.Overrun = r.Float64() * 0.2
	}
	if r.Intn(3) == 0 {
		o.Violate = r.Float64() * 0.2
	}
	if r.Intn(3) == 0 {
		o.Lie = r.Float64() * 0.2
	}
	h := histgen.Mutex(t, o)
	want := checker.Compose(mustSelect(t)...).Report(ctx, h)
	ttl := time.Duration(o.TTL) * time.Millisecond
	// The last two close own parts by count, every few dozen events,
	// long before their time is up.
	for _, sz := range []Options{{}, {Window: ttl}, {Reach: 4 * ttl, Back: 2 * ttl, Window: ttl / 2}, {Window: 8 * ttl},
		{MaxEvents: 40}, {Window: 8 * ttl, MaxEvents: 97}} {
		got, s := streamReportMax(t, h, sz)
		windows += s.nWindows
		if got.Verdict != want.Verdict || !sameTally(tally(got), tally(want)) {
			t.Fatalf("seed %d (%+v), window %+v: stream %s %v, whole %s %v\nstream: %s\nwhole:  %s",
				seed, o, sz, got.Verdict, tally(got), want.Verdict, tally(want), startTimes(got), startTimes(want))
		}
	}
	return want.Verdict, windows
}

func mustSelect(t testing.TB) []checker.Checker {
	c, err := checker.Select(checker.Builtin(), nil, checker.MutexOptions{MaxAnomalies: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c.Checkers()
}

// Batch sets the own part of a window in Reaches when Window is not set, and
// only then; the agreement test above covers own parts of that length.
func TestStreamBatchSizesWindows(t *testing.T) {
	run := &history.RunInfo{Clients: 1, Keys: 1, TTLMillis: 1000}
	tests := []struct {
		name    string
		o       Options
		wantWin int64
	}{
		{"default: one reach", Options{}, 4e9},
		{"batch 1", Options{Batch: 1}, 4e9},
		{"batch 2", Options{Batch: 2}, 8e9},
		{"batch of a set reach", Options{Batch: 3, Reach: time.Second}, 3e9},
		{"window wins", Options{Batch: 3, Window: 500 * time.Millisecond}, 5e8},
		{"negative batch", Options{Batch: -2}, 4e9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(checker.Builtin(), nil, checker.MutexOptions{}, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			s.Add(context.Background(), history.Event{Type: history.Info, Op: history.RunOp, Run: run})
			if _, win, _ := s.sizes(); win != tt.wantWin {
				t.Errorf("own part %d ns, want %d", win, tt.wantWin)
			}
		})
	}
}

// The counts are exact whatever cap is set on the anomalies listed: a
// window that finds more anomalies of one kind than the cap still counts
// them all (a stream that let its windows' checkers cap their lists counted
// only what they listed, so a check with long windows reported 95 double
// holders of a run's 177).
func TestStreamCountsPastTheListCap(t *testing.T) {
	ctx := context.Background()
	over := 0
	for seed := int64(1); seed <= 20; seed++ {
		o := histgen.MutexOptions{Clients: 6, Ops: 600, TTL: 20, Seed: seed, Overrun: 0.3, Violate: 0.3, Unknown: 0.05}
		h := histgen.Mutex(t, o)
		want := checker.Compose(mustSelect(t)...).Report(ctx, h)
		ttl := time.Duration(o.TTL) * time.Millisecond
		for _, limit := range []int{0, 3} {
			for _, so := range []Options{{}, {Batch: 4}, {Window: 20 * ttl}} {
				s, err := New(checker.Builtin(), nil, checker.MutexOptions{MaxAnomalies: limit}, so)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range h.Events {
					s.Add(ctx, e)
				}
				got := s.Close(ctx)
				for k, n := range want.Count {
					if got.Count[k] != n {
						t.Fatalf("seed %d, cap %d, window %+v: %s counted %d, the whole history has %d", seed, limit, so, k, got.Count[k], n)
					}
				}
				if limit == 3 {
					for k, n := range want.Count {
						if n > 3*2 {
							over++
						}
						if listed := tally(got); n > 3 && sumKind(listed, k) > 3 {
							t.Fatalf("seed %d: %s listed %d past the cap of 3", seed, k, sumKind(listed, k))
						}
					}
				}
			}
		}
	}
	if over == 0 {
		t.Fatal("no history found more anomalies of a kind than twice the cap: the test shows nothing")
	}
}

func sumKind(t map[string]int, k checker.Kind) int {
	n := 0
	for kc, v := range t {
		if strings.HasPrefix(kc, string(k)+"/") {
			n += v
		}
	}
	return n
}

// Every checker of a workload streams: on generated histories of each
// resource workload (tasks queued twice, units sold past the stock, stale
// tokens, counts off by one, operations that return TTLs late), the
// windowed check of each checker finds what the whole-history check finds,
// by kind and class, with windows from a fraction of a TTL to many, and
// own parts closed by count.
func TestStreamAgreesOnWorkloads(t *testing.T) {
	ctx := context.Background()
	checkers := map[string][]string{
		"batch": {"duplicate-work"},
		"stock": {"oversell"},
		// With lease-claims: a slow read or write leaves the release
		// after the lease ran out, and the release says it deleted.
		"fenced": {"stale-write", "lost-update", "fence-regression", "lease-claims"},
		// The lock's own checkers too: a window that left out the outer
		// acquire must still read a nested one as entering it again.
		"reentrant": {"reentrant", "lost-update", "liveness", "mutual-exclusion", "linearizable", "foreign-release", "lease-claims"},
		// The same, on nested leases of their own.
		"reentrant-token": {"liveness", "mutual-exclusion", "linearizable", "foreign-release", "lease-claims"},
	}
	for _, wl := range []string{"batch", "stock", "fenced", "reentrant", "reentrant-token"} {
		t.Run(wl, func(t *testing.T) {
			t.Parallel()
			found := map[checker.Verdict]int{}
			for seed := int64(1); seed <= 40; seed++ {
				r := rand.New(rand.NewSource(seed))
				o := histgen.WorkloadOptions{Workload: wl, Clients: 2 + r.Intn(6), Ops: 100 + r.Intn(300), TTL: int64(10 + r.Intn(40)), Seed: seed,
					Unknown: r.Float64() * 0.05, Slow: r.Float64() * 0.05}
				if r.Intn(2) == 0 {
					o.Chaos = r.Float64() * 0.3
				}
				h := histgen.Workload(t, o)
				names := checkers[wl]
				want := map[string]checker.Result{}
				for _, n := range names {
					e, err := checker.Builtin().Get(n)
					if err != nil {
						t.Fatal(err)
					}
					res := e.New(checker.MutexOptions{MaxAnomalies: -1}).Check(ctx, h)
					want[n] = res
					found[res.Verdict]++
				}
				ttl := time.Duration(o.TTL) * time.Millisecond
				for _, sz := range []Options{{}, {Window: ttl}, {Reach: 4 * ttl, Back: 2 * ttl, Window: ttl / 2}, {MaxEvents: 40}, {Window: 8 * ttl, MaxEvents: 97}} {
					s, err := New(checker.Builtin(), names, checker.MutexOptions{MaxAnomalies: -1}, sz)
					if err != nil {
						t.Fatal(err)
					}
					s.Add(ctx, history.Event{Type: history.Info, Op: history.RunOp, Run: h.Run})
					for _, e := range h.Events {
						s.Add(ctx, e)
					}
					if u := s.Unbounded(); len(u) > 0 {
						t.Fatalf("%v judge the whole history at once", u)
					}
					rep := s.Close(ctx)
					for _, got := range rep.Results {
						w, ok := want[got.Checker]
						if !ok {
							continue
						}
						gt, wt := tally(checker.Report{Anomalies: got.Anomalies}), tally(checker.Report{Anomalies: w.Anomalies})
						if got.Verdict != w.Verdict || !sameTally(gt, wt) {
							t.Fatalf("seed %d (%+v), window %+v, %s: stream %s %v, whole %s %v",
								seed, o, sz, got.Checker, got.Verdict, gt, w.Verdict, wt)
						}
					}
				}
			}
			t.Logf("verdicts %v", found)
			if found[checker.Invalid] < 10 || found[checker.Valid] < 10 {
				t.Fatalf("the histories do not exercise both verdicts: %v", found)
			}
		})
	}
}
