package checker

import (
	"context"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker/internal/histgen"
	"github.com/locktorture/locktorture/checker/model"
	"github.com/locktorture/locktorture/history"
)

// allCheckers is the default set, with the linearizability search cut into
// tiny segments as well, so that every legal history also exercises the
// carrying of states across cuts.
func allCheckers() []Checker {
	return []Checker{
		MutualExclusion(),
		Linearizable(LinearizableOptions{}),
		Linearizable(LinearizableOptions{SegmentOps: 2}),
		ForeignRelease(),
		Liveness(LivenessOptions{}),
		LeaseClaims(),
		LostUpdate(),
	}
}

// TestLegalHistoriesPass runs every checker on histories a correct lock
// can produce (legalCases): none may flag anything.
func TestLegalHistoriesPass(t *testing.T) {
	cases := legalCases()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := histgen.NewBuilder(t, 100)
			tc.build(b)
			h := b.Build()
			for _, c := range allCheckers() {
				if tc.name == "a late release deletes nothing" && (c.Name() == "mutual-exclusion" || c.Name() == "lost-update") {
					continue
				}
				r := c.Check(context.Background(), h)
				if r.Verdict != Valid {
					t.Errorf("%s: verdict %s, anomalies %s, error %q", c.Name(), r.Verdict, dump(r.Anomalies), r.Error)
				}
			}
		})
	}
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// want is the part of an anomaly a test pins down.
type want struct {
	kind         Kind
	class        Class
	clients      []int
	keys         []string
	start, end   int64
	detail       []string // substrings of Detail
	anyTimes     bool     // do not check start and end
	leases       []string // checked when set
	countOfKind  int      // 0 means 1
	otherCounted []Kind   // other kinds the same checker may report too
}

func checkAnomaly(t *testing.T, r Result, w want) {
	t.Helper()
	if r.Verdict != Invalid {
		t.Fatalf("verdict %s, want invalid (error %q)", r.Verdict, r.Error)
	}
	n := w.countOfKind
	if n == 0 {
		n = 1
	}
	if r.Count[w.kind] != n {
		t.Fatalf("count of %s = %d, want %d: %s", w.kind, r.Count[w.kind], n, dump(r.Anomalies))
	}
	var a *Anomaly
	for i := range r.Anomalies {
		if r.Anomalies[i].Kind == w.kind {
			a = &r.Anomalies[i]
			break
		}
	}
	if a == nil {
		t.Fatalf("no %s anomaly listed", w.kind)
	}
	if a.Class != w.class {
		t.Errorf("class %q, want %q", a.Class, w.class)
	}
	if !reflect.DeepEqual(a.Clients, w.clients) {
		t.Errorf("clients %v, want %v", a.Clients, w.clients)
	}
	if !reflect.DeepEqual(a.Keys, w.keys) {
		t.Errorf("keys %v, want %v", a.Keys, w.keys)
	}
	if w.leases != nil && !reflect.DeepEqual(a.Leases, w.leases) {
		t.Errorf("leases %v, want %v", a.Leases, w.leases)
	}
	if !w.anyTimes && (a.StartNS != w.start || a.EndNS != w.end) {
		t.Errorf("times [%s, %s], want [%s, %s]", history.FormatTime(a.StartNS), history.FormatTime(a.EndNS), history.FormatTime(w.start), history.FormatTime(w.end))
	}
	for _, s := range w.detail {
		if !strings.Contains(a.Detail, s) {
			t.Errorf("detail %q does not say %q", a.Detail, s)
		}
	}
	for k := range r.Count {
		if k != w.kind && !contains(w.otherCounted, k) {
			t.Errorf("unexpected %s anomalies too: %s", k, dump(r.Anomalies))
		}
	}
}

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// TestAnomaliesAreFlagged runs each checker on a history with one anomaly
// of its kind (anomalyCases) and pins down what it reports.
func TestAnomaliesAreFlagged(t *testing.T) {
	cases := anomalyCases()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkAnomaly(t, tc.checker.Check(context.Background(), tc.build(t)), tc.want)
		})
	}
}

func TestNonlinearizableWritesVisualization(t *testing.T) {
	path := filepath.Join(t.TempDir(), "linearizability.html")
	h := secondConfusion(t)
	// A fault window over the second confusion, to be drawn beside it.
	h.Events = append(h.Events, history.Event{Type: history.Info, Op: history.FaultStart, Fault: "pause-client", Target: "c1", Time: h.End() + 1},
		history.Event{Type: history.Info, Op: history.FaultHeal, Fault: "pause-client", Target: "c1", Time: h.End() + 2})
	h.Events[len(h.Events)-2].Time, h.Events[len(h.Events)-1].Time = int64(130*time.Millisecond), int64(160*time.Millisecond)
	sortEvents(h)
	r := Linearizable(LinearizableOptions{VisualizationPath: path}).Check(context.Background(), h)
	if r.Verdict != Invalid || r.Count[KindNonlinearizable] != 1 {
		t.Fatalf("want one nonlinearizable key, got %s", dump(r))
	}
	// It names the file beside the history, never where this machine put it.
	if d := r.Anomalies[0].Detail; !strings.Contains(d, "(see linearizability.html)") || strings.Contains(d, filepath.Dir(path)) {
		t.Errorf("detail does not point at the visualization by its name alone: %q", d)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, s := range []string{"<html", "client 1 (process 1) release a", "held by client 2 (lease b, written no earlier than 0.099s",
		"pause-client on c1, 0.130s to 0.160s"} {
		if !strings.Contains(html, s) {
			t.Errorf("visualization lacks %q", s)
		}
	}
}

// The second confusion breaks several promises at once; the composed
// verdict must name each.
func TestComposedReport(t *testing.T) {
	rep := ForMutex(MutexOptions{}).Report(context.Background(), secondConfusion(t))
	if rep.Verdict != Invalid {
		t.Fatalf("verdict %s", rep.Verdict)
	}
	for _, k := range []Kind{KindDoubleHolder, KindForeignRelease, KindNonlinearizable, KindLostUpdate} {
		if rep.Count[k] == 0 {
			t.Errorf("no %s in %v", k, rep.Count)
		}
	}
	if rep.Count[KindStuckLock]+rep.Count[KindSpuriousFailure] != 0 {
		t.Errorf("liveness anomalies in a live history: %v", rep.Count)
	}
	// Client 1's plain DEL deleted client 2's live key: a foreign
	// release, not a phantom one.
	if n := rep.Count[KindPhantomRelease] + rep.Count[KindPhantomRenewal] + rep.Count[KindFailedRelease]; n != 0 {
		t.Errorf("lease-claims anomalies where the lock told the truth: %v", rep.Count)
	}
	if len(rep.Results) != 7 {
		t.Fatalf("got %d results", len(rep.Results))
	}
	total := 0
	for _, r := range rep.Results {
		for _, n := range r.Count {
			total += n
		}
	}
	if len(rep.Anomalies) != total {
		t.Errorf("listed %d anomalies, counted %d", len(rep.Anomalies), total)
	}
	// The report is what summary.json holds: it must marshal, with the
	// documented field names.
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{`"verdict":"invalid"`, `"kind":"double-holder"`, `"class":"lease-outlived"`, `"start_ns":`, `"end_ns":`, `"clients":[`, `"detail":"`} {
		if !strings.Contains(string(b), f) {
			t.Errorf("summary JSON lacks %s", f)
		}
	}
	one := ForMutex(MutexOptions{}).Check(context.Background(), secondConfusion(t))
	if one.Verdict != Invalid || !reflect.DeepEqual(one.Count, rep.Count) {
		t.Errorf("Check and Report disagree: %v vs %v", one.Count, rep.Count)
	}
	if _, ok := one.Stats["mutual-exclusion.holds"]; !ok {
		t.Errorf("composed stats lack the checkers' own: %v", one.Stats)
	}
}

func TestFoldVerdicts(t *testing.T) {
	v := Result{Verdict: Valid}
	u := Result{Verdict: Unknown}
	i := Result{Verdict: Invalid, Count: map[Kind]int{KindLostUpdate: 2}}
	for _, tc := range []struct {
		in   []Result
		want Verdict
	}{
		{nil, Valid},
		{[]Result{v, v}, Valid},
		{[]Result{v, u}, Unknown},
		{[]Result{u, i, v}, Invalid},
	} {
		if got := Fold(tc.in...).Verdict; got != tc.want {
			t.Errorf("Fold(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// A lock broken ten thousand times over must still give a readable report:
// the list is capped per kind, the count is not.
func TestAnomaliesAreCappedPerKind(t *testing.T) {
	b := histgen.NewBuilder(t, 0)
	for i := range 60 {
		lease := string(rune('A'+i%26)) + string(rune('a'+i/26))
		b.AcquireTTL(i, i, lease, 0, float64(i), float64(i)+0.5, history.OK)
	}
	b.Crash(99, 99, 100) // the history runs on past the last acquire
	h := b.Build()
	r := MutualExclusion().Check(context.Background(), h)
	if r.Count[KindDoubleHolder] != 60*59/2 || len(r.Anomalies) != DefaultMaxAnomalies {
		t.Fatalf("count %d, listed %d", r.Count[KindDoubleHolder], len(r.Anomalies))
	}
	r = MutualExclusion(MaxAnomalies(3)).Check(context.Background(), h)
	if len(r.Anomalies) != 3 {
		t.Fatalf("listed %d with MaxAnomalies(3)", len(r.Anomalies))
	}
	r = MutualExclusion(MaxAnomalies(-1)).Check(context.Background(), h)
	if len(r.Anomalies) != 60*59/2 {
		t.Fatalf("listed %d with no cap", len(r.Anomalies))
	}
}

// Stuck locks are not reported while a fault explains them, nor while a
// live holder keeps the key.
func TestStuckLockExcuses(t *testing.T) {
	waiters := func(b *histgen.Builder) {
		for at := 2.0; at < 500; at += 101 {
			b.AcquireFail(2, 2, at, at+100)
		}
	}
	t.Run("fault active", func(t *testing.T) {
		b := histgen.NewBuilder(t, 100)
		b.AcquireTTL(1, 1, "a", 0, 0, 1, history.OK).Crash(1, 1, 10)
		waiters(b)
		b.Fault("partition", 5, 300)
		r := Liveness(LivenessOptions{}).Check(context.Background(), b.Build())
		// Stuck from the heal at 300 ms to the end at 506 ms: 2.06 ttl.
		if r.Verdict != Valid {
			t.Fatalf("%s", dump(r))
		}
	})
	t.Run("holder still working", func(t *testing.T) {
		b := histgen.NewBuilder(t, 100)
		b.AcquireTTL(1, 1, "a", 0, 0, 1, history.OK).Read(1, 1, 2, 3, 0)
		waiters(b)
		b.Write(1, 1, 504, 505, 1, 1).Release(1, 1, "a", 506, 507, true)
		r := Liveness(LivenessOptions{}).Check(context.Background(), b.Build())
		if r.Verdict != Valid {
			t.Fatalf("%s", dump(r))
		}
	})
	t.Run("shorter factor", func(t *testing.T) {
		b := histgen.NewBuilder(t, 100)
		b.AcquireTTL(1, 1, "a", 0, 0, 1, history.OK).Crash(1, 1, 10)
		waiters(b)
		b.Fault("partition", 5, 300)
		r := Liveness(LivenessOptions{StuckFactor: 2}).Check(context.Background(), b.Build())
		checkAnomaly(t, r, want{kind: KindStuckLock, clients: []int{1, 2}, keys: []string{"lock:0"},
			start: histgen.MS(300) + 1, end: histgen.MS(506), detail: []string{"crashed at 0.010s"}})
	})
}

// TestLivenessFaultRules: an instant fault (a client crash) excuses no
// stuck stretch after it, and a fault aimed at one client (a pause) makes
// that client's failed acquire no evidence of a free lock.
func TestLivenessFaultRules(t *testing.T) {
	t.Run("crash-client does not excuse the lock it leaves stuck", func(t *testing.T) {
		b := histgen.NewBuilder(t, 100)
		b.AcquireTTL(1, 1, "a", 0, 0, 1, history.OK).Crash(1, 1, 10)
		for at := 2.0; at < 500; at += 101 {
			b.AcquireFail(2, 2, at, at+100)
		}
		b.FaultOn("crash-client", "c1 (at its next hold)", 10, 10)
		b.FaultOn("crash-client", "c2 (at its next attempt)", 200, 200)
		r := Liveness(LivenessOptions{}).Check(context.Background(), b.Build())
		checkAnomaly(t, r, want{kind: KindStuckLock, clients: []int{1, 2}, keys: []string{"lock:0"},
			start: histgen.MS(10), end: histgen.MS(506)})
	})
	for _, tc := range []struct {
		name   string
		target string
		want   int
	}{
		{"paused client saw nothing", "c2", 0},
		{"another client paused", "c3", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := histgen.NewBuilder(t, 100)
			b.Acquire(1, 1, "a", 0, 1).Hold(1, 1, 2, 10, 0, 1).Release(1, 1, "a", 20, 21, true)
			b.AcquireFail(2, 2, 30, 130)
			b.FaultOn("pause-client", tc.target, 25, 135)
			r := Liveness(LivenessOptions{}).Check(context.Background(), b.Build())
			if got := r.Count[KindSpuriousFailure]; got != tc.want {
				t.Fatalf("%d spurious failures, want %d: %s", got, tc.want, dump(r))
			}
		})
	}
}

func TestLinearizableTimeoutIsUnknown(t *testing.T) {
	h := histgen.Mutex(t, histgen.MutexOptions{Clients: 8, Ops: 4000, TTL: 100, Seed: 3, Refresh: true})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := Linearizable(LinearizableOptions{}).Check(ctx, h)
	if r.Verdict != Unknown || r.Error == "" {
		t.Fatalf("a cancelled search must be unknown: %s %q", r.Verdict, r.Error)
	}
	r = Linearizable(LinearizableOptions{Timeout: time.Nanosecond}).Check(context.Background(), h)
	if r.Verdict != Unknown || !strings.Contains(r.Error, "budget") {
		t.Fatalf("a search out of time must be unknown: %s %q", r.Verdict, r.Error)
	}
}

// The segmented search must reach the same verdict as one porcupine search
// over the whole key, on legal histories and on broken ones alike, with
// unknown outcomes, refreshes and expired leases in the mix.
func TestSegmentedSearchAgreesWithWholeSearch(t *testing.T) {
	whole := Linearizable(LinearizableOptions{SegmentOps: 1 << 30})
	cut := []Checker{
		Linearizable(LinearizableOptions{SegmentOps: 3}),
		Linearizable(LinearizableOptions{SegmentOps: 17}),
	}
	invalid := 0
	for seed := int64(1); seed <= 120; seed++ {
		o := histgen.MutexOptions{Clients: 4, Ops: 120, TTL: 50, Seed: seed, Unknown: 0.1, Refresh: seed%2 == 0, Overrun: 0.1}
		if seed%3 == 0 {
			o.Violate = 0.1
		}
		h := histgen.Mutex(t, o)
		want := whole.Check(context.Background(), h)
		if want.Verdict == Invalid {
			invalid++
		}
		if o.Violate == 0 && want.Verdict != Valid {
			t.Fatalf("seed %d: legal history judged %s: %s", seed, want.Verdict, dump(want.Anomalies))
		}
		for _, c := range cut {
			got := c.Check(context.Background(), h)
			if got.Verdict != want.Verdict {
				t.Fatalf("seed %d: segmented verdict %s (%d segments), whole %s", seed, got.Verdict, got.Stats["segments"], want.Verdict)
			}
			if got.Stats["segments"] < 2 {
				t.Fatalf("seed %d: history was not cut", seed)
			}
		}
	}
	if invalid < 10 {
		t.Fatalf("only %d broken histories were found invalid: the generator or the model is too lenient", invalid)
	}
}

func TestGeneratedLegalHistoriesPassAll(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		h := histgen.Mutex(t, histgen.MutexOptions{Clients: 8, Ops: 3000, TTL: 100, Seed: seed, Refresh: seed%2 == 1, Unknown: 0.02 * float64(seed%3)})
		rep := ForMutex(MutexOptions{}).Report(context.Background(), h)
		if rep.Verdict != Valid {
			t.Fatalf("seed %d: %s %s", seed, rep.Verdict, dump(rep))
		}
	}
}

// exactVerdict searches every key exactly, in one segment: the reference
// the cheaper searches must agree with. It is the plain truth: every
// unknown outcome may take effect at any time, or never; no deadlines.
func exactVerdict(t *testing.T, h *history.History) Verdict {
	t.Helper()
	v := Valid
	for _, k := range model.Exact(context.Background(), model.Options{Timeout: time.Minute}, modelInput(newIndex(h)), false) {
		switch k.Verdict {
		case model.Invalid:
			v = Invalid
		case model.Unknown:
			t.Fatalf("exact search of %s ran out of time", k.Key)
		}
	}
	return v
}

// The bounded search is a restriction of the truth and the relaxed one a
// relaxation: together with the exact fallback, and cut into segments or
// not, they must reach the verdict of one exact search of the whole key.
// The histories are small and varied: few or many clients, ttls shorter
// than the holds, lost replies, SETs that ran late, overruns, and locks
// that grant twice. A 1 ms horizon makes the bounded search fail often, so
// that all three searches get to decide.
func TestSearchesAgreeWithExact(t *testing.T) {
	decidedBy := map[int64]int{}
	verdicts := map[Verdict]int{}
	for seed := int64(1); seed <= 600; seed++ {
		r := rand.New(rand.NewSource(seed))
		o := histgen.MutexOptions{Clients: 2 + r.Intn(5), Ops: 30 + r.Intn(60), TTL: int64(10 + r.Intn(60)), Seed: seed,
			Unknown: r.Float64() * 0.3, Orphan: r.Float64(), Refresh: r.Intn(2) == 0, Overrun: r.Float64() * 0.2}
		if r.Intn(3) == 0 {
			o.Violate = r.Float64() * 0.2
		}
		h := histgen.Mutex(t, o)
		want := exactVerdict(t, h)
		verdicts[want]++
		for i, c := range []Checker{
			Linearizable(LinearizableOptions{UnknownHorizon: time.Millisecond, SegmentOps: 1 + r.Intn(10)}),
			Linearizable(LinearizableOptions{SegmentOps: 1 + r.Intn(20)}),
			Linearizable(LinearizableOptions{UnknownHorizon: time.Duration(r.Intn(100)) * time.Millisecond, SegmentOps: 1 << 30}),
		} {
			got := c.Check(context.Background(), h)
			if got.Verdict != want {
				t.Fatalf("seed %d, checker %d (%+v): %s (%v), the exact search says %s", seed, i, o, got.Verdict, got.Stats, want)
			}
			if i == 0 {
				decidedBy[got.Stats["relaxed_searches"]+got.Stats["exact_searches"]]++
			}
		}
	}
	t.Logf("verdicts %v; decided by %v (0 = bounded, 1 = relaxed, 2 = exact)", verdicts, decidedBy)
	if decidedBy[0] == 0 || decidedBy[1] == 0 || decidedBy[2] == 0 || verdicts[Invalid] < 40 {
		t.Fatalf("the histories do not exercise every search: verdicts %v, decided by %v", verdicts, decidedBy)
	}
}

// sortEvents puts hand-added events in time order, as a recorder writes them.
func sortEvents(h *history.History) {
	sort.SliceStable(h.Events, func(i, j int) bool { return h.Events[i].Time < h.Events[j].Time })
}
