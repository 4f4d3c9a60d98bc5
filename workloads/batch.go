package workloads

import (
	"context"
	"slices"
	"sync"

	"github.com/locktorture/locktorture/history"
)

// TaskTable is the batch workload's task table and queue (seed 000's 场景):
// per table key, tasks that users submitted, each pending (1-待处理) until a
// scheduler marks it queued (2-已入列) and puts it on the queue. It is kept
// in the harness and is never faulted: whatever goes wrong with it went
// wrong in the lock. It holds only what is still pending, so that a run of
// millions of tasks keeps a few per key.
type TaskTable struct {
	mu   sync.Mutex
	keys map[string]*taskKey
}

// taskKey is one table key's tasks: ids are handed out in order, so the
// pending ones stay sorted.
type taskKey struct {
	pending []int64 // oldest first
	next    int64   // the last id handed out
	queued  int64   // queue length
}

// NewTaskTable returns an empty table.
func NewTaskTable() *TaskTable {
	return &TaskTable{keys: map[string]*taskKey{}}
}

func (t *TaskTable) key(key string) *taskKey {
	k := t.keys[key]
	if k == nil {
		k = &taskKey{}
		t.keys[key] = k
	}
	return k
}

// Pending is the scheduler's query: up to n pending tasks of key, oldest
// first. Users keep submitting: when fewer than n are pending, new tasks
// arrive first, so a query never comes back empty.
func (t *TaskTable) Pending(key string, n int) []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.key(key)
	for len(k.pending) < n {
		k.next++
		k.pending = append(k.pending, k.next)
	}
	return append([]int64(nil), k.pending[:n]...)
}

// Enqueue marks task id queued and then puts it on the queue, in the
// seed's order (status first, so a consumer never sees a queued task still
// marked pending). It returns the task's position on the queue. A task that
// is no longer pending is queued all the same: the scheduler trusts the
// query it made under the lock.
func (t *TaskTable) Enqueue(key string, id int64) (pos int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.key(key)
	if i, ok := slices.BinarySearch(k.pending, id); ok {
		k.pending = slices.Delete(k.pending, i, i+1)
	}
	k.queued++
	return k.queued
}

// BatchOptions shape the batch workload.
type BatchOptions struct {
	MutexOptions
	// Size is how many pending tasks one scheduler run pulls. Zero means 3.
	Size int
}

// Batch is the batch workload: each client is one of the scheduler
// processes of seed 000's batch service. Under the lock it queries the
// pending tasks, works (the hold: preparing the batch), then marks each
// task queued and enqueues it. Two schedulers inside at once query the same
// pending tasks and both enqueue them: the enqueue operations (Value: task
// id) let the duplicate-work checker count every task queued twice.
type Batch struct {
	opts  BatchOptions
	table *TaskTable
}

// NewBatch returns the batch workload.
func NewBatch(opts BatchOptions) (*Batch, error) {
	if err := checkShape(&opts.MutexOptions); err != nil {
		return nil, err
	}
	if err := orDefault(&opts.Size, 3, 1000, "batch size"); err != nil {
		return nil, err
	}
	return &Batch{opts: opts, table: NewTaskTable()}, nil
}

// Name implements Workload.
func (w *Batch) Name() string { return "batch" }

// Table is the guarded resource.
func (w *Batch) Table() *TaskTable { return w.table }

// Step implements Workload.
func (w *Batch) Step(ctx context.Context, p *Process) error {
	o := w.opts.MutexOptions
	key := o.Key(p.Rand.Intn(o.Keys))
	h, err := take(ctx, p, o, key)
	if err != nil || h == nil {
		return err
	}
	if err := p.Gate.Step(ctx, "hold"); err != nil {
		return err
	}
	tasks := w.table.Pending(key, w.opts.Size)
	if err := p.Gate.Sleep(ctx, h.work); err != nil {
		return err
	}
	for _, id := range tasks {
		if err := p.Gate.Step(ctx, "enqueue"); err != nil {
			return err
		}
		done := resourceOp(p, history.Event{Op: history.Enqueue, Key: key, Value: history.Int64(id)})
		pos := w.table.Enqueue(key, id)
		done.done(history.OK, history.Event{Seq: pos})
	}
	return finish(ctx, p, h.lease, h.abandon, o.Think)
}
