package checker

import (
	"context"
	"testing"

	"github.com/locktorture/locktorture/checker/internal/histgen"
)

// The composed default checker on generated legal mutex histories: eight
// clients contending for one key with a bounded wait (so a good share of
// the acquires fail), read and write inside every hold, a watchdog refresh
// in the middle of it, and a release. One key is the hard case: it is one
// porcupine partition.
func BenchmarkCheck10k(b *testing.B)  { benchCheck(b, 10_000) }
func BenchmarkCheck100k(b *testing.B) { benchCheck(b, 100_000) }

func benchCheck(b *testing.B, ops int) {
	h := histgen.Mutex(b, histgen.MutexOptions{Clients: 8, Ops: ops, TTL: 100, Seed: 1, Refresh: true})
	n := len(h.Operations())
	c := ForMutex(MutexOptions{})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if r := c.Report(context.Background(), h); r.Verdict != Valid {
			b.Fatalf("legal history judged %s: %v", r.Verdict, r.Count)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
