package workloads

import (
	"context"
	"sync"

	"github.com/locktorture/locktorture/history"
)

// Task statuses of the task table (seed 000's 1-待处理 and 2-已入列).
const (
	taskPending = 1
	taskQueued  = 2
)

// TaskTable is the batch workload's task table and queue (seed 000's 场景):
// per table key, tasks that users submitted, each pending until a scheduler
// marks it queued and puts it on the queue. It is kept in the harness and is
// never faulted: whatever goes wrong with it went wrong in the lock.
type TaskTable struct {
	mu     sync.Mutex
	status map[string]map[int64]int
	order  map[string][]int64 // pending tasks, oldest first
	next   map[string]int64
	queued map[string]int64 // queue length per key
}

// NewTaskTable returns an empty table.
func NewTaskTable() *TaskTable {
	return &TaskTable{status: map[string]map[int64]int{}, order: map[string][]int64{},
		next: map[string]int64{}, queued: map[string]int64{}}
}

// Pending is the scheduler's query: up to n pending tasks of key, oldest
// first. Users keep submitting: when fewer than n are pending, new tasks
// arrive first, so a query never comes back empty.
func (t *TaskTable) Pending(key string, n int) []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := inner(t.status, key)
	var pending []int64
	for _, id := range t.order[key] {
		if st[id] == taskPending {
			pending = append(pending, id)
		}
	}
	for len(pending) < n {
		t.next[key]++
		id := t.next[key]
		st[id] = taskPending
		pending = append(pending, id)
	}
	t.order[key] = pending
	return append([]int64(nil), pending[:n]...)
}

// Enqueue marks task id queued and then puts it on the queue, in the
// seed's order (status first, so a consumer never sees a queued task still
// marked pending). It returns the task's position on the queue. A task that
// is no longer pending is queued all the same: the scheduler trusts the
// query it made under the lock.
func (t *TaskTable) Enqueue(key string, id int64) (pos int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.status[key]; st != nil {
		st[id] = taskQueued
	}
	t.queued[key]++
	return t.queued[key]
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
