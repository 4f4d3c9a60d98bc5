package checker

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker/internal/histgen"
	"github.com/locktorture/locktorture/checker/model"
	"github.com/locktorture/locktorture/history"
)

// When no later operation names the lease of an acquire of unknown outcome
// (as in every history the harness writes), the one relaxed search decides
// the key; it must agree with the exact search, which tries every place
// each such acquire may have taken effect, on every small history.
func TestGhostSearchAgreesWithExact(t *testing.T) {
	var ghostly, invalid int
	o := model.Options{SegmentOps: 10, Timeout: 10 * time.Second}
	for seed := int64(1); seed <= 1000; seed++ {
		h := histgen.Mutex(t, histgen.MutexOptions{Clients: 3, Ops: 40, TTL: 50, Seed: seed, Unknown: 0.4, Orphan: 0.5, Violate: 0.05, Overrun: 0.1})
		in := modelInput(newIndex(h))
		got := model.Check(context.Background(), o, in).Keys
		exact := model.Exact(context.Background(), o, in, true)
		for i, kc := range got {
			if !kc.Ghostly {
				continue
			}
			ghostly++
			if kc.Searches != 1 {
				t.Fatalf("seed %d: %d searches of a ghostly key, want the relaxed one alone", seed, kc.Searches)
			}
			if kc.Verdict != exact[i].Verdict || kc.Verdict == model.Unknown {
				t.Fatalf("seed %d: ghost search says %v, exact %v", seed, kc.Verdict, exact[i].Verdict)
			}
			if kc.Verdict == model.Invalid {
				invalid++
			}
		}
	}
	if ghostly < 300 || invalid == 0 || invalid == ghostly {
		t.Fatalf("only %d ghostly keys, %d invalid: the comparison shows little", ghostly, invalid)
	}
	t.Logf("%d ghostly keys, %d invalid", ghostly, invalid)
}

// A release that deleted a key nobody held is explained by an acquire of
// unknown outcome that wrote it, once: the second such release needs a
// second lost acquire.
func TestGhostKeyExplainsOneRelease(t *testing.T) {
	build := func(lost, deleting int) *Result {
		b := histgen.NewBuilder(t, 50)
		for i := 0; i < lost; i++ {
			b.AcquireUnknown(1, 10+i, "u"+string(rune('a'+i)), float64(2+i), float64(8+i))
		}
		for i := 0; i < deleting; i++ {
			at := float64(100 * (i + 1))
			lease := "y" + string(rune('a'+i))
			// Client 2's DEL is replayed after the key was gone, and
			// the replay deletes some key too.
			b.Acquire(2, 2, lease, at, at+1).Release(2, 2, lease, at+10, at+11, true)
			b.Release(2, 2, lease, at+20, at+21, true)
		}
		r := Linearizable(LinearizableOptions{}).Check(context.Background(), b.Build())
		return &r
	}
	cases := []struct {
		lost, deleting int
		want           Verdict
	}{
		{1, 1, Valid},
		{1, 2, Invalid},
		{2, 2, Valid},
	}
	for _, tc := range cases {
		r := build(tc.lost, tc.deleting)
		if r.Verdict != tc.want || r.Stats["exact_searches"] != 0 {
			t.Errorf("%d lost acquires, %d releases of a key nobody held: %s, want %s: %s", tc.lost, tc.deleting, r.Verdict, tc.want, dump(*r))
		}
	}
}

// failoverHistory imitates a token lock under lossy failovers: six clients
// take turns on one key with a 2 s ttl; every 6 s the master is gone for
// 3 s, and every acquire sent meanwhile times out with an unknown outcome
// (dozens in all), some of them writing the key when a new master takes
// over, which then keeps everyone out for a ttl.
func failoverHistory(t testing.TB, seed int64) *history.History {
	b := histgen.NewBuilder(t, 2000)
	b.Run.Clients = 6
	rng := rand.New(rand.NewSource(seed))
	const second = 1000.0 // the builder thinks in ms
	procs := []int{1, 2, 3, 4, 5, 6}
	next := 7
	leases := 0
	now := 10.0
	for now < 30*second {
		if phase := int(now) % int(6*second); phase >= int(3*second) {
			// Outage: each client's acquire, sent now, times out.
			end := now + float64(int(6*second)-phase)
			for c := range procs {
				call := now + rng.Float64()*200
				leases++
				b.AcquireUnknown(c, procs[c], fmt.Sprintf("c%d-%d", c, leases), call, call+1500+rng.Float64()*1500)
				procs[c] = next
				next++
			}
			now = end + 1
			if rng.Intn(2) == 0 {
				now += 2000 // a lost SET landed on the new master: nobody gets in for a ttl
			}
			continue
		}
		c := rng.Intn(len(procs))
		leases++
		lease := fmt.Sprintf("c%d-%d", c, leases)
		hold := 50 + rng.Float64()*250
		b.Acquire(c, procs[c], lease, now, now+1)
		for o := range procs {
			if o != c && rng.Intn(3) == 0 {
				b.AcquireFail(o, procs[o], now+2, now+hold)
			}
		}
		b.Release(c, procs[c], lease, now+1+hold, now+2+hold, true)
		now += 3 + hold
	}
	return b.Build()
}

// Around failovers dozens of acquires have unknown outcomes; the check
// must still decide (here: valid, since the simulated lock is correct).
func TestUnknownHeavyHistoryDecides(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		h := failoverHistory(t, seed)
		r := Linearizable(LinearizableOptions{}).Check(context.Background(), h)
		if r.Verdict != Valid || r.Stats["unknown_outcome"] < 30 {
			t.Fatalf("seed %d: %s with %d unknown outcomes: %s", seed, r.Verdict, r.Stats["unknown_outcome"], r.Error)
		}
	}
}

// BenchmarkUnknownHeavy is the check of one failover-like history.
func BenchmarkUnknownHeavy(b *testing.B) {
	h := failoverHistory(b, 1)
	for b.Loop() {
		if r := Linearizable(LinearizableOptions{}).Check(context.Background(), h); r.Verdict != Valid {
			b.Fatal(r.Verdict, r.Error)
		}
	}
}
