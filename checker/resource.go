package checker

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/distinct"
)

// StaleWrite returns the checker of a fenced resource: reads and writes
// that carry a fencing token (Fence) and the resource's own order (Seq).
// In that order, a write the resource accepted although it had already
// seen a higher token, on a read or an accepted write, is a stale write:
// a holder whose lease had run out changed the resource after a newer
// holder had touched it. Writes the resource refused (fail) are what
// fencing is for; the result's stats count them.
func StaleWrite(opts ...Option) Checker {
	return newCarryingChecker("stale-write", opts, func() carrier { return &staleJudge{keys: map[string]*staleKey{}} })
}

// staleJudge carries, per key, the accepted request with the highest
// token, and the requests it cannot order yet.
type staleJudge struct{ keys map[string]*staleKey }

type staleKey struct {
	top *history.Operation // the accepted request with the highest token so far
	q   inOrder
}

func (j *staleJudge) judge(c *collector, w *Window) {
	for i := range w.Ops {
		o := &w.Ops[i]
		if (o.Op == history.Read || o.Op == history.Write) && o.Fence != 0 && o.Seq > 0 && o.Status != history.Unknown {
			k := j.keys[o.Key]
			if k == nil {
				k = &staleKey{q: bySeq()}
				j.keys[o.Key] = k
			}
			k.q.push(o)
		}
	}
	var writes, accepted, rejected, stale int64
	for _, key := range sortedKeys(j.keys) {
		k := j.keys[key]
		for _, o := range k.q.pop(w.Later) {
			if o.Op == history.Write {
				writes++
				if o.Status != history.OK {
					rejected++
					continue
				}
				accepted++
				if k.top != nil && o.Fence < k.top.Fence {
					stale++
					c.add(staleAnomaly(key, o, k.top))
				}
			}
			if o.Status == history.OK && (k.top == nil || o.Fence > k.top.Fence) {
				k.top = o
			}
		}
	}
	c.stat("writes", writes)
	c.stat("accepted", accepted)
	c.stat("rejected", rejected)
	c.stat("stale", stale)
}

func staleAnomaly(key string, w, top *history.Operation) Anomaly {
	return Anomaly{
		Kind:      KindStaleWrite,
		Clients:   distinct.Of(w.Client, top.Client),
		Processes: distinct.Of(w.Process, top.Process),
		Keys:      []string{key},
		Leases:    []string{},
		StartNS:   w.Call,
		EndNS:     w.Return,
		Detail: fmt.Sprintf("the resource accepted client %d's write to %s at %s with fencing token %d (request %d) after client %d's %s with token %d (request %d)",
			w.Client, key, history.FormatTime(w.Return), w.Fence, w.Seq, top.Client, top.Op, top.Fence, top.Seq),
	}
}

// DuplicateWork returns the checker of the batch workload: every task
// (enqueue's Value) may go on the queue of its key once; each further ok
// enqueue of it is duplicate work, two schedulers having pulled the same
// pending tasks at once.
func DuplicateWork(opts ...Option) Checker {
	return newCarryingChecker("duplicate-work", opts, func() carrier {
		return &dupJudge{keys: map[string]*dupKey{}}
	})
}

type task struct {
	key string
	id  int64
}

// dupJudge carries, per key, the tasks queued and, for a while, who
// queued each first, to name both when one comes again.
type dupJudge struct{ keys map[string]*dupKey }

// dupKey is one key's tasks. A key's task ids are handed out in order, so
// the set compresses to a few runs and the recent first enqueues, kept in
// id order, are mostly appended: a full-speed run queues some 10^5 tasks
// in the recall, at 24 bytes each.
type dupKey struct {
	tasks  *roaring64.Bitmap
	recent []firstEnqueue // sorted by id
}

// firstEnqueue is a task's first ok enqueue: all a duplicate's anomaly
// names of it.
type firstEnqueue struct {
	id              int64
	client, process int32
	ret             int64
}

// recall is how long, in TTLs, the judge keeps who queued a task first: a
// duplicate comes from a scheduler that pulled the task before that first
// enqueue, inside one hold, so it is seldom much later.
const recall = 10

func (d *dupJudge) judge(c *collector, w *Window) {
	var enqueued, dups, fresh int64
	for i := range w.Ops {
		o := &w.Ops[i]
		if o.Op != history.Enqueue || o.Status != history.OK || o.Value == nil {
			continue
		}
		enqueued++
		t := task{o.Key, *o.Value}
		k := d.keys[t.key]
		if k == nil {
			k = &dupKey{tasks: roaring64.New()}
			d.keys[t.key] = k
		}
		if k.tasks.CheckedAdd(uint64(t.id)) {
			fresh++
			k.remember(firstEnqueue{t.id, int32(o.Client), int32(o.Process), o.Return})
			continue
		}
		dups++
		first, ok := k.first(t.id)
		c.add(dupAnomaly(t, first, ok, o))
	}
	horizon := w.Later - recall*runTTL(w.Run)
	for _, k := range d.keys {
		k.forget(horizon)
		if fresh > 0 {
			k.tasks.RunOptimize()
		}
	}
	c.stat("enqueued", enqueued)
	c.stat("tasks", fresh)
	c.stat("duplicates", dups)
}

func (k *dupKey) remember(f firstEnqueue) {
	if n := len(k.recent); n == 0 || k.recent[n-1].id < f.id {
		k.recent = append(k.recent, f)
		return
	}
	i, _ := slices.BinarySearchFunc(k.recent, f.id, byID)
	k.recent = slices.Insert(k.recent, i, f)
}

func (k *dupKey) first(id int64) (firstEnqueue, bool) {
	i, ok := slices.BinarySearchFunc(k.recent, id, byID)
	if !ok {
		return firstEnqueue{}, false
	}
	return k.recent[i], true
}

func byID(f firstEnqueue, id int64) int { return cmp.Compare(f.id, id) }

// forget drops the first enqueues that returned before t, from the oldest
// task on: ids are handed out in order, so the oldest tasks were mostly
// queued first, and one queued late holds the younger ones back for no
// longer than its own recall.
func (k *dupKey) forget(t int64) {
	n := 0
	for n < len(k.recent) && k.recent[n].ret < t {
		n++
	}
	if n > 0 {
		k.recent = append(k.recent[:0], k.recent[n:]...)
	}
}

func dupAnomaly(t task, a firstEnqueue, known bool, o *history.Operation) Anomaly {
	an := Anomaly{
		Kind: KindDuplicateWork, Clients: []int{o.Client}, Processes: []int{o.Process}, Keys: []string{t.key},
		StartNS: o.Call, EndNS: o.Return,
		Detail: fmt.Sprintf("task %d of %s was enqueued again by client %d at %s, over %d TTLs after its first enqueue",
			t.id, t.key, o.Client, history.FormatTime(o.Return), recall),
	}
	if known {
		an.Clients, an.Processes = distinct.Of(int(a.client), o.Client), distinct.Of(int(a.process), o.Process)
		an.Detail = fmt.Sprintf("task %d of %s was enqueued by client %d at %s and again by client %d at %s",
			t.id, t.key, a.client, history.FormatTime(a.ret), o.Client, history.FormatTime(o.Return))
	}
	return an
}

// runTTL is the run's lease time, or a second.
func runTTL(run *history.RunInfo) int64 {
	if run != nil && run.TTLMillis > 0 {
		return run.TTLMillis * 1e6
	}
	return 1e9
}
