package checker

import (
	"fmt"

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
		return &dupJudge{tasks: map[string]*roaring64.Bitmap{}, first: map[task]enqueuer{}}
	})
}

type task struct {
	key string
	id  int64
}

// dupJudge carries, per key, the set of tasks queued (compressed: a key's
// task ids are mostly consecutive), and for a while who queued each first,
// to name both when one comes again.
type dupJudge struct {
	tasks map[string]*roaring64.Bitmap
	// first has the first enqueue of the tasks queued lately, listed in
	// order in recent: a duplicate comes from a scheduler that pulled the
	// task before that first enqueue, inside one hold, so it is seldom
	// much later.
	first  map[task]enqueuer
	recent []task
}

// enqueuer is who queued a task first and when it returned: all a
// duplicate's anomaly names of it, kept small because a full-speed run
// queues some 10^5 tasks in the recall.
type enqueuer struct {
	client, process int32
	ret             int64
}

// recall is how long, in TTLs, the judge keeps who queued a task first.
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
		set := d.tasks[t.key]
		if set == nil {
			set = roaring64.New()
			d.tasks[t.key] = set
		}
		if set.CheckedAdd(uint64(t.id)) {
			fresh++
			d.first[t] = enqueuer{int32(o.Client), int32(o.Process), o.Return}
			d.recent = append(d.recent, t)
			continue
		}
		dups++
		first, ok := d.first[t]
		c.add(dupAnomaly(t, first, ok, o))
	}
	d.forget(w.Later - recall*runTTL(w.Run))
	if fresh > 0 {
		for _, set := range d.tasks {
			set.RunOptimize()
		}
	}
	c.stat("enqueued", enqueued)
	c.stat("tasks", fresh)
	c.stat("duplicates", dups)
}

// forget drops who queued first the tasks first queued before t.
func (d *dupJudge) forget(t int64) {
	n := 0
	for n < len(d.recent) && d.first[d.recent[n]].ret < t {
		delete(d.first, d.recent[n])
		n++
	}
	d.recent = append(d.recent[:0], d.recent[n:]...)
}

func dupAnomaly(t task, a enqueuer, known bool, o *history.Operation) Anomaly {
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
