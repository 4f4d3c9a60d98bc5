package checker

import (
	"context"
	"testing"

	"github.com/locktorture/locktorture/checker/internal/histgen"
)

// TestClosestGrant: how close another client's grant came to a lease in
// force, while the lease was neither released nor lost with a crash: the
// margin torture hunt gives energy to.
func TestClosestGrant(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(b *histgen.Builder)
		want  int64 // ms; -1 << 40 for none
	}{
		{"released before the next grant", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 11, 12, true)
			b.Acquire(2, 2, "b", 5, 13).Release(2, 2, "b", 21, 22, true)
		}, -1 << 40},
		{"a holder's lease ran out 20ms before the next grant", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 200, 201, false)
			b.Acquire(2, 2, "b", 10, 120).Release(2, 2, "b", 130, 131, true)
		}, 20},
		{"a grant inside the lease", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Release(1, 1, "a", 200, 201, false)
			b.Acquire(2, 2, "b", 10, 50).Release(2, 2, "b", 60, 61, true)
		}, -50},
		{"a crashed holder's key expired", func(b *histgen.Builder) {
			b.Acquire(1, 1, "a", 0, 1).Crash(1, 1, 20)
			b.Acquire(2, 2, "b", 10, 120).Release(2, 2, "b", 131, 132, true)
		}, -1 << 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := histgen.NewBuilder(t, 100)
			tc.build(b)
			r := MutualExclusion().Check(context.Background(), b.Build())
			got, ok := r.Stats[StatClosestGrant]
			switch {
			case tc.want == -1<<40 && ok:
				t.Errorf("stat %d ns; want none", got)
			case tc.want != -1<<40 && (!ok || got != tc.want*1e6):
				t.Errorf("stat %d ns (set %v); want %d ms", got, ok, tc.want)
			}
		})
	}
}
