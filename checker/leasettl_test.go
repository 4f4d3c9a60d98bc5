package checker

import (
	"context"
	"testing"

	"github.com/locktorture/locktorture/checker/internal/histgen"
	"github.com/locktorture/locktorture/history"
)

// TestLeaseOwnTTL: a lease written with a TTL of its own (a library's
// tolerance added to the run's: a lock program's grant ttl_ms, a Go
// lock's Lease.TTL) is judged by it. A second holder 120 ms after a lease
// of 150 ms began came within it, though the run's TTL is 100 ms: read
// with the run's TTL the same overlap would pass as lease-outlived.
func TestLeaseOwnTTL(t *testing.T) {
	for _, tc := range []struct {
		ttl  int64
		want Class
	}{{150, ClassWithinLease}, {100, ClassLeaseOutlived}} {
		b := histgen.NewBuilder(t, 100)
		b.AcquireTTL(1, 1, "a", tc.ttl, 0, 1, history.OK)
		b.AcquireTTL(2, 2, "b", 100, 120, 121, history.OK)
		b.Release(1, 1, "a", 130, 131, true).Release(2, 2, "b", 140, 141, true)
		r := MutualExclusion().Check(context.Background(), b.Build())
		if len(r.Anomalies) != 1 || r.Anomalies[0].Kind != KindDoubleHolder || r.Anomalies[0].Class != tc.want {
			t.Errorf("lease of %d ms, run TTL 100 ms: %+v, want one double holder %s", tc.ttl, r.Anomalies, tc.want)
		}
	}
}
