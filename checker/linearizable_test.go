package checker

import (
	"context"
	"testing"

	"github.com/locktorture/locktorture/checker/internal/histgen"
	"github.com/locktorture/locktorture/history"
)

// A command sent before its client gave up may run much later (a paused
// Redis executes what sat in its socket buffer when it resumes). The fast
// search assumes it ran within the horizon and finds no legal order; the
// exact one must then find the order in which it ran late.
func TestExactSearchAfterBoundedFails(t *testing.T) {
	b := histgen.NewBuilder(t, 100)
	// Client 1's SET times out; client 2 acquires and releases; much later
	// client 1's new process deletes the key its lost SET wrote, which
	// is only possible if that SET ran after client 2's release.
	b.AcquireUnknown(1, 1, "u", 0, 10)
	b.Acquire(2, 2, "x", 150, 151).Release(2, 2, "x", 160, 161, true)
	b.Release(1, 3, "u", 300, 301, true)
	h := b.Build()
	r := Linearizable(LinearizableOptions{}).Check(context.Background(), h)
	if r.Verdict != Valid || r.Stats["relaxed_searches"] != 1 || r.Stats["exact_searches"] != 1 {
		t.Fatalf("verdict %s: %s", r.Verdict, dump(r))
	}
	r = Linearizable(LinearizableOptions{UnknownHorizon: histgen.Dur(1000)}).Check(context.Background(), h)
	if r.Verdict != Valid || r.Stats["exact_searches"] != 0 {
		t.Fatalf("with a 1 s horizon the fast search should do: %s", dump(r))
	}
	// Without the lost SET, the same release deleted a key nobody had.
	b = histgen.NewBuilder(t, 100)
	b.Acquire(2, 2, "x", 150, 151).Release(2, 2, "x", 160, 161, true)
	b.Release(1, 3, "u", 300, 301, true)
	r = Linearizable(LinearizableOptions{}).Check(context.Background(), b.Build())
	checkAnomaly(t, r, want{kind: KindNonlinearizable, clients: []int{1}, keys: []string{"lock:0"}, start: histgen.MS(300), end: histgen.MS(301),
		detail: []string{"client 1's release of lease u (ok, deleted the key, 0.300s to 0.301s)", "the lock was then free"}})
}

// A SET stuck behind a paused Redis runs when the pause ends: the fast
// search allows for that when the history records the fault.
func TestBoundedSearchWaitsForHeal(t *testing.T) {
	build := func(withFault bool) *history.History {
		b := histgen.NewBuilder(t, 100)
		b.AcquireUnknown(1, 1, "u", 0, 10)
		b.Acquire(2, 2, "x", 150, 151).Release(2, 2, "x", 160, 161, true)
		b.Release(1, 3, "u", 450, 451, true)
		if withFault {
			b.Fault("pause", 5, 400)
		}
		return b.Build()
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

// TestNonlinearizableReadsTheSame: a history's nonlinearizable keys are
// explained the same way every time it is checked, although the search's
// library lists its longest legal orders in no fixed order.
func TestNonlinearizableReadsTheSame(t *testing.T) {
	found := 0
	for seed := int64(1); seed <= 40 && found < 5; seed++ {
		h := histgen.Mutex(t, histgen.MutexOptions{Clients: 4, Ops: 300, TTL: 100, Seed: seed, Violate: 0.2, Unknown: 0.1})
		first := ""
		for i := range 8 {
			r := Linearizable(LinearizableOptions{}).Check(context.Background(), h)
			detail := ""
			for _, a := range r.Anomalies {
				detail += a.Detail + "\n"
			}
			if i == 0 {
				first = detail
				if detail == "" {
					break
				}
				found++
				continue
			}
			if detail != first {
				t.Fatalf("seed %d, check %d explains differently:\n%s\nthen:\n%s", seed, i+1, first, detail)
			}
		}
	}
	if found == 0 {
		t.Fatal("no generated history was nonlinearizable: the test tested nothing")
	}
}
