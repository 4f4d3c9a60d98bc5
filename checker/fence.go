package checker

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/distinct"
)

// FenceRegression returns the checker of fencing tokens: on each key, an
// acquire that returned ok must carry a higher token than every acquire
// that returned ok before it was invoked. Acquires that overlap in time may
// come in either order, so only real-time order is judged. A token that
// went backwards (the counter lost INCRs in a failover, or restarted empty)
// makes a fenced resource refuse the legitimate holder, or, if the stale
// token is the higher one, accept the older holder over the newer.
// Acquires without a token (fence 0) are not judged.
func FenceRegression(opts ...Option) Checker {
	return newCarryingChecker("fence-regression", opts, func() carrier { return &fenceJudge{keys: map[string]*fenceKey{}} })
}

// fenceJudge carries, per key, the highest token of the acquires that
// returned before any later window's calls, and the acquires that returned
// since (a later acquire may have been called before them).
type fenceJudge struct{ keys map[string]*fenceKey }

type fenceKey struct {
	top    *history.Operation   // the highest token returned before Later
	recent []*history.Operation // returned at or after Later
}

// judge sweeps each key's fenced acquires in call order, folding in every
// acquire that returned before the current one's call (and the carried
// top) and keeping the highest token: an acquire whose token is no higher
// than that regressed. It reads the window's operations in place and
// copies out only what it carries.
func (f *fenceJudge) judge(c *collector, w *Window) {
	perKey := map[string][]*history.Operation{}
	for i := range w.Ops {
		if o := &w.Ops[i]; o.Op == history.Acquire && o.Status == history.OK && o.Fence != 0 {
			perKey[o.Key] = append(perKey[o.Key], o)
		}
	}
	var fenced, keys int64
	for _, key := range sortedKeys(perKey) {
		k := f.keys[key]
		if k == nil {
			k = &fenceKey{}
			f.keys[key] = k
			keys++
		}
		byCall := perKey[key]
		fenced += int64(len(byCall))
		slices.SortStableFunc(byCall, func(a, b *history.Operation) int { return cmp.Compare(a.Call, b.Call) })
		byReturn := append(append([]*history.Operation(nil), k.recent...), byCall...)
		slices.SortStableFunc(byReturn, func(a, b *history.Operation) int { return cmp.Compare(a.Return, b.Return) })
		top, j := k.top, 0
		for _, b := range byCall {
			for ; j < len(byReturn) && byReturn[j].Return < b.Call; j++ {
				if top == nil || byReturn[j].Fence > top.Fence {
					top = byReturn[j]
				}
			}
			if top != nil && top.Fence >= b.Fence {
				c.add(fenceAnomaly(key, top, b))
			}
		}
		k.recent = k.recent[:0]
		for _, o := range byReturn {
			switch {
			case o.Return >= w.Later:
				k.recent = append(k.recent, held(o))
			case k.top == nil || o.Fence > k.top.Fence:
				k.top = held(o)
			}
		}
	}
	c.stat("fenced_acquires", fenced)
	c.stat("keys", keys)
}

func fenceAnomaly(key string, a, b *history.Operation) Anomaly {
	return Anomaly{
		Kind:      KindFenceRegression,
		Clients:   distinct.Of(a.Client, b.Client),
		Processes: distinct.Of(a.Process, b.Process),
		Keys:      []string{key},
		Leases:    []string{a.Lease, b.Lease},
		StartNS:   b.Call,
		EndNS:     b.Return,
		Detail: fmt.Sprintf("client %d acquired %s at %s with fencing token %d, no higher than the %d client %d had been given at %s, before this acquire began",
			b.Client, key, history.FormatTime(b.Return), b.Fence, a.Fence, a.Client, history.FormatTime(a.Return)),
	}
}
