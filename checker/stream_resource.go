package checker

import (
	"sort"

	"github.com/locktorture/locktorture/history"
)

// lostStream is the lost-update check over consecutive windows: the
// counter's writes are judged in the resource's order (Seq) once they have
// returned before the window's own end, against the value the last judged
// write stored, which is all it carries from window to window.
type lostStream struct {
	name string
	keys map[string]*lostKey
}

type lostKey struct {
	started bool // prev is set: from the first read, or a judged write
	prev    int64
	lastSeq int64
	before  *history.Operation
}

func newLostStream(name string) *lostStream {
	return &lostStream{name: name, keys: map[string]*lostKey{}}
}

// window judges the writes of ops that returned before ownTo and were not
// judged before.
func (u *lostStream) window(ops []history.Operation, ownTo int64) Result {
	c := newCollector(u.name, settings{maxAnomalies: -1})
	firstRead := map[string]int64{}
	perKey := map[string][]*history.Operation{}
	var writes, unordered int64
	for i := range ops {
		o := &ops[i]
		switch {
		case o.Op == history.Read && o.Status == history.OK && o.Value != nil:
			if _, ok := firstRead[o.Key]; !ok {
				firstRead[o.Key] = *o.Value
			}
		case o.Op == history.Write && o.Status == history.OK && o.Value != nil && o.Return < ownTo:
			k := u.keys[o.Key]
			if o.Seq <= 0 {
				unordered++
				continue
			}
			if k != nil && o.Seq <= k.lastSeq {
				continue // judged in an earlier window
			}
			perKey[o.Key] = append(perKey[o.Key], o)
		}
	}
	for _, key := range sortedKeys(perKey) {
		ws := perKey[key]
		sort.SliceStable(ws, func(i, j int) bool { return ws[i].Seq < ws[j].Seq })
		k := u.keys[key]
		if k == nil {
			k = &lostKey{}
			u.keys[key] = k
		}
		if !k.started {
			k.prev, k.started = firstRead[key], true
		}
		for _, w := range ws {
			writes++
			if v := *w.Value; v <= k.prev {
				c.add(lostAnomaly(key, w, k.before, k.prev))
			}
			cp := *w
			cp.Tries = nil
			k.prev, k.before, k.lastSeq = *w.Value, &cp, w.Seq
		}
	}
	c.stat("writes", writes)
	c.stat("writes_without_seq", unordered)
	return c.result()
}

// fenceStream is the fence-regression check over consecutive windows; it
// carries, per key, the acquire with the highest token among those that
// returned before the next window begins.
type fenceStream struct {
	name string
	top  map[string]*history.Operation
}

func newFenceStream(name string) *fenceStream {
	return &fenceStream{name: name, top: map[string]*history.Operation{}}
}

// window judges the fenced acquires of ops against the carried tokens and
// each other (as FenceRegression does), then carries the highest token of
// those that returned before carryBefore.
func (f *fenceStream) window(ops []history.Operation, carryBefore int64) Result {
	return f.judge(ops, carryBefore, settings{maxAnomalies: -1})
}

// judge sweeps each key's fenced acquires in call order, folding in every
// acquire that returned before the current one's call (and the carried
// one) and keeping the highest token: an acquire whose token is no higher
// than that regressed.
func (f *fenceStream) judge(ops []history.Operation, carryBefore int64, s settings) Result {
	c := newCollector(f.name, s)
	perKey := map[string][]*history.Operation{}
	for i := range ops {
		o := &ops[i]
		if o.Op == history.Acquire && o.Status == history.OK && o.Fence != 0 {
			perKey[o.Key] = append(perKey[o.Key], o)
		}
	}
	var fenced int64
	for _, key := range sortedKeys(perKey) {
		byCall := perKey[key]
		fenced += int64(len(byCall))
		byReturn := append([]*history.Operation(nil), byCall...)
		sort.SliceStable(byReturn, func(i, j int) bool { return byReturn[i].Return < byReturn[j].Return })
		carried := f.top[key]
		top := carried
		j := 0
		for _, b := range byCall {
			for ; j < len(byReturn) && byReturn[j].Return < b.Call; j++ {
				if top == nil || byReturn[j].Fence > top.Fence {
					top = byReturn[j]
				}
			}
			if top != nil && top.Fence >= b.Fence && (top != carried || carried.Return < b.Call) {
				c.add(fenceAnomaly(key, top, b))
			}
		}
		for _, o := range byReturn {
			if o.Return < carryBefore && (f.top[key] == nil || o.Fence > f.top[key].Fence) {
				cp := *o
				cp.Tries = nil
				f.top[key] = &cp
			}
		}
	}
	c.stat("fenced_acquires", fenced)
	c.stat("keys", int64(len(perKey)))
	return c.result()
}
