package checker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/checker/stream"
	"github.com/locktorture/locktorture/history"
)

// lateRelease is a checker as another module writes one, with the exported
// API only: a release that deleted nothing (its lease had run out) is an
// anomaly of its own kind. It streams: each window's operations, once.
type lateRelease struct{}

func (lateRelease) Name() string { return "late-release" }

func (l lateRelease) Check(ctx context.Context, h *history.History) checker.Result {
	return l.Start().Judge(ctx, checker.WholeWindow(h))
}

func (lateRelease) Start() checker.Judge { return lateJudge{} }

type lateJudge struct{}

func (lateJudge) Judge(_ context.Context, w *checker.Window) checker.Result {
	r := checker.Result{Checker: "late-release", Verdict: checker.Valid, Count: map[checker.Kind]int{}}
	for _, o := range w.Ops {
		if o.Op == history.Release && o.Status == history.OK && o.Deleted != nil && !*o.Deleted {
			r.Anomalies = append(r.Anomalies, checker.Anomaly{Kind: "late-release", Clients: []int{o.Client},
				Keys: []string{o.Key}, StartNS: o.Call, EndNS: o.Return, Detail: "a release deleted nothing"})
			r.Count["late-release"]++
			r.Verdict = checker.Invalid
		}
	}
	return r
}

// opCount needs the whole history at once: it implements Checker only.
type opCount struct{}

func (opCount) Name() string { return "op-count" }

func (opCount) Check(_ context.Context, h *history.History) checker.Result {
	return checker.Result{Checker: "op-count", Verdict: checker.Valid, Count: map[checker.Kind]int{},
		Stats: map[string]int64{"ops": int64(len(h.Operations()))}}
}

// A checker from another module that implements Windowed streams like the
// built-ins (nothing is kept for it, and it finds what it finds on the
// whole history); one that implements only Checker still runs, and the
// report says the stream had to keep every event for it.
func TestOutsideCheckersStream(t *testing.T) {
	ctx := context.Background()
	reg := checker.Builtin()
	err := reg.Register(
		checker.Entry{Name: "late-release", Summary: "a release deleted nothing", New: func(checker.MutexOptions) checker.Checker { return lateRelease{} }},
		checker.Entry{Name: "op-count", Summary: "operations, counted at the end", New: func(checker.MutexOptions) checker.Checker { return opCount{} }},
	)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		unbounded bool
	}{
		{"late-release", false},
		{"op-count", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			found := 0
			for seed := int64(1); seed <= 10; seed++ {
				h := checker.GenOverruns(t, seed)
				e, err := reg.Get(tt.name)
				if err != nil {
					t.Fatal(err)
				}
				want := e.New(checker.MutexOptions{}).Check(ctx, h)
				rep, s := streamed(t, reg, tt.name, checker.MutexOptions{MaxAnomalies: -1}, stream.Options{Window: 20e6}, h)
				if got := len(s.Unbounded()) > 0; got != tt.unbounded {
					t.Fatalf("unbounded %v (%v), want %v", got, s.Unbounded(), tt.unbounded)
				}
				if noted := strings.Contains(strings.Join(rep.Notes, "\n"), "memory not bounded: checker "+tt.name); noted != tt.unbounded {
					t.Fatalf("notes %q", rep.Notes)
				}
				for _, r := range rep.Results {
					if r.Checker == tt.name && (r.Verdict != want.Verdict || r.Count["late-release"] != want.Count["late-release"]) {
						t.Fatalf("seed %d: stream %s %v, whole %s %v", seed, r.Verdict, r.Count, want.Verdict, want.Count)
					}
				}
				found += want.Count["late-release"]
			}
			if tt.name == "late-release" && found == 0 {
				t.Fatal("no late release in the histories: the test shows nothing")
			}
		})
	}
}

// An outside checker declares the severity of its kinds in its entry: a
// kind declared liveness is counted and marked liveness (so --fail-on
// safety reports it without failing); one not declared is safety, the
// cautious side. A liveness kind it does not report is refused.
func TestOutsideSeverity(t *testing.T) {
	h := checker.GenOverruns(t, 3)
	entry := func(liveness ...checker.Kind) checker.Entry {
		return checker.Entry{Name: "late-release", Summary: "a release deleted nothing", Kinds: map[checker.Kind][]checker.Class{"late-release": nil},
			Liveness: liveness, New: func(checker.MutexOptions) checker.Checker { return lateRelease{} }}
	}
	for _, tc := range []struct {
		name     string
		liveness []checker.Kind
		want     checker.Severity
	}{
		{"declared liveness", []checker.Kind{"late-release"}, checker.SeverityLiveness},
		{"undeclared", nil, checker.SeveritySafety},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := checker.Builtin()
			if err := reg.Register(entry(tc.liveness...)); err != nil {
				t.Fatal(err)
			}
			rep, _ := streamed(t, reg, "late-release", checker.MutexOptions{}, stream.Options{}, h)
			n := rep.Count["late-release"]
			if n == 0 {
				t.Fatal("no late release in the history: the test shows nothing")
			}
			safety := rep.Count[checker.KindDoubleHolder] + rep.Count[checker.KindForeignRelease] + rep.Count[checker.KindNonlinearizable] + rep.Count[checker.KindLostUpdate]
			if tc.want == checker.SeverityLiveness && rep.Severity[checker.SeveritySafety] != safety {
				t.Errorf("safety count %d, want %d (late releases counted as safety?)", rep.Severity[checker.SeveritySafety], safety)
			}
			for _, a := range rep.Anomalies {
				if a.Kind == "late-release" && a.Severity != tc.want {
					t.Fatalf("a late release marked %s, want %s", a.Severity, tc.want)
				}
			}
		})
	}
	if err := checker.Builtin().Register(entry(checker.KindStuckLock)); err == nil {
		t.Error("an entry declaring a liveness kind it does not report was accepted")
	}
}

// streamed checks h, header first, through a stream.Stream of reg's lock
// checkers and the one named: the checkers above see only package checker.
func streamed(t *testing.T, reg *checker.Registry, name string, mo checker.MutexOptions, so stream.Options, h *history.History) (checker.Report, *stream.Stream) {
	t.Helper()
	ctx := context.Background()
	s, err := stream.New(reg, []string{name}, mo, so)
	if err != nil {
		t.Fatal(err)
	}
	s.Add(ctx, history.Event{Type: history.Info, Op: history.RunOp, Run: h.Run})
	for _, ev := range h.Events {
		s.Add(ctx, ev)
	}
	return s.Close(ctx), s
}
