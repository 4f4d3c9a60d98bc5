package checker

import (
	"context"
	"fmt"
	"math"

	"github.com/locktorture/locktorture/history"
)

// FenceRegression returns the checker of fencing tokens: on each key, an
// acquire that returned ok must carry a higher token than every acquire
// that returned ok before it was invoked. Acquires that overlap in time may
// come in either order, so only real-time order is judged. A token that
// went backwards (the counter lost INCRs in a failover, or restarted empty)
// makes a fenced resource refuse the legitimate holder, or, if the stale
// token is the higher one, accept the older holder over the newer.
// Acquires without a token (fence 0) are not judged.
func FenceRegression(opts ...Option) Checker { return &fenceRegression{s: newSettings(opts)} }

type fenceRegression struct{ s settings }

func (*fenceRegression) Name() string { return "fence-regression" }

func (f *fenceRegression) Check(_ context.Context, h *history.History) Result {
	// The whole history is one window with nothing carried into it.
	return newFenceStream(f.Name()).judge(h.Operations(), func(string) int64 { return math.MinInt64 }, f.s)
}

func fenceAnomaly(key string, a, b *history.Operation) Anomaly {
	return Anomaly{
		Kind:      KindFenceRegression,
		Clients:   uniqueInts(a.Client, b.Client),
		Processes: uniqueInts(a.Process, b.Process),
		Keys:      []string{key},
		Leases:    []string{a.Lease, b.Lease},
		StartNS:   b.Call,
		EndNS:     b.Return,
		Detail: fmt.Sprintf("client %d acquired %s at %s with fencing token %d, no higher than the %d client %d had been given at %s, before this acquire began",
			b.Client, key, fmtTime(b.Return), b.Fence, a.Fence, a.Client, fmtTime(a.Return)),
	}
}
