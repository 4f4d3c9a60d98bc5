package checker

import (
	"sort"

	"github.com/locktorture/locktorture/history"
)

// lostStream is the lost-update check over consecutive windows: the
// counter's writes are judged in the resource's order (Seq) once they have
// returned before the window's own end, against the value the last judged
// write stored, which is all it carries from window to window.
// resourceOps keeps the guarded resource's operations apart from the lock
// window: invocations until they complete, then the completed pairs until
// the resource checks have judged them.
type resourceOps struct {
	open map[int64]history.Event
	done []history.Operation // completed, in completion order
}

func newResourceOps() resourceOps { return resourceOps{open: map[int64]history.Event{}} }

// add takes a resource operation's invocation or completion. It returns the
// invocation and true when e completes it with an unknown outcome: such an
// operation ends its process's hold, so the caller retains both events in
// the window as well.
func (r *resourceOps) add(e history.Event) (history.Event, bool) {
	if e.Type == history.Invoke {
		r.open[e.ID] = e
		return history.Event{}, false
	}
	inv, ok := r.open[e.ID]
	if !ok {
		return history.Event{}, false // validated input never gets here
	}
	delete(r.open, e.ID)
	if e.Type == history.Unknown {
		return inv, true
	}
	r.done = append(r.done, history.Operation{ID: e.ID, Process: e.Process, Client: e.Client, Op: e.Op, Key: e.Key,
		Call: inv.Time, Return: e.Time, Status: e.Type, Fence: pick64(e.Fence, inv.Fence), Value: pickPtr(e.Value, inv.Value), Seq: e.Seq})
	return history.Event{}, false
}

// judged drops the operations that returned before t: the resource checks
// have seen them.
func (r *resourceOps) judged(t int64) {
	n := 0
	for _, o := range r.done {
		if o.Return >= t {
			r.done[n] = o
			n++
		}
	}
	clear(r.done[n:])
	r.done = r.done[:n]
}

// drainOpen returns the invocations never completed, in time order, and
// forgets them.
func (r *resourceOps) drainOpen() []history.Event {
	out := make([]history.Event, 0, len(r.open))
	for _, e := range r.open {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	clear(r.open)
	return out
}

func pick64(a, b int64) int64 {
	if a != 0 {
		return a
	}
	return b
}

func pickPtr(a, b *int64) *int64 {
	if a != nil {
		return a
	}
	return b
}

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

// window judges the writes of ops (in any order) that returned before
// ownTo and were not judged before.
func (u *lostStream) window(ops []history.Operation, ownTo int64) Result {
	c := newCollector(u.name, settings{maxAnomalies: -1})
	// The counter starts where the first read (by call) found it.
	firstRead := map[string]*history.Operation{}
	perKey := map[string][]*history.Operation{}
	var writes, unordered int64
	for i := range ops {
		o := &ops[i]
		switch {
		case o.Op == history.Read && o.Status == history.OK && o.Value != nil:
			if f := firstRead[o.Key]; f == nil || o.Call < f.Call || o.Call == f.Call && o.ID < f.ID {
				firstRead[o.Key] = o
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
	start := func(key string) *lostKey {
		k := u.keys[key]
		if k == nil {
			k = &lostKey{}
			u.keys[key] = k
		}
		if !k.started {
			if f := firstRead[key]; f != nil {
				k.prev = *f.Value
			}
			k.started = true
		}
		return k
	}
	for key, f := range firstRead {
		if f.Return < ownTo {
			start(key) // the read is judged now: the next window will not see it
		}
	}
	for _, key := range sortedKeys(perKey) {
		ws := perKey[key]
		sort.SliceStable(ws, func(i, j int) bool { return ws[i].Seq < ws[j].Seq })
		k := start(key)
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
func (f *fenceStream) window(ops []history.Operation, carryBefore func(key string) int64) Result {
	return f.judge(ops, carryBefore, settings{maxAnomalies: -1})
}

// judge sweeps each key's fenced acquires in call order, folding in every
// acquire that returned before the current one's call (and the carried
// one) and keeping the highest token: an acquire whose token is no higher
// than that regressed.
func (f *fenceStream) judge(ops []history.Operation, carryBefore func(key string) int64, s settings) Result {
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
			if o.Return < carryBefore(key) && (f.top[key] == nil || o.Fence > f.top[key].Fence) {
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
