package workloads

import (
	"context"
	"sync"

	"github.com/locktorture/locktorture/history"
)

// FencedStore is the guarded resource of the fenced workload: one integer
// per key, kept in the harness (never faulted), that sees the fencing token
// of every request. A checking store refuses a write whose token is older
// than the highest it has seen on that key, read or write, as the storage
// in Kleppmann's fencing scheme does; an unchecked store accepts every
// write, which is what a resource that ignores the tokens does. Seq numbers
// every request in the order the store handled it.
//
// A request without a token (fence 0: the lock hands none out) cannot be
// judged and is accepted.
type FencedStore struct {
	check bool

	mu       sync.Mutex
	vals     map[string]int64
	highest  map[string]int64
	seq      map[string]int64
	rejected int64
}

// NewFencedStore returns a store at zero; check makes it refuse stale tokens.
func NewFencedStore(check bool) *FencedStore {
	return &FencedStore{check: check, vals: map[string]int64{}, highest: map[string]int64{}, seq: map[string]int64{}}
}

// Read returns key's value and the request's sequence number, and notes
// the token.
func (s *FencedStore) Read(key string, token int64) (v, seq int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.highest[key] = max(s.highest[key], token)
	s.seq[key]++
	return s.vals[key], s.seq[key]
}

// Write stores v unless the store checks tokens and token is older than
// the highest it has seen for key. It returns the request's sequence number
// and whether the write was accepted.
func (s *FencedStore) Write(key string, token, v int64) (seq int64, accepted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq[key]++
	if s.check && token != 0 && token < s.highest[key] {
		s.rejected++
		return s.seq[key], false
	}
	s.highest[key] = max(s.highest[key], token)
	s.vals[key] = v
	return s.seq[key], true
}

// Rejected is how many writes the store refused.
func (s *FencedStore) Rejected() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rejected
}

// Fenced is the fenced workload: acquire, read the store with the lease's
// fencing token, work, write the value back plus one with the same token,
// release. Reads and writes are the history's read and write operations
// with Fence set (and Seq, the store's order), so the lost-update checker
// judges them as it judges the mutex workload's counter, and the
// stale-write checker counts writes accepted with an older token than the
// store had seen. A refused write completes as fail.
type Fenced struct {
	opts  MutexOptions
	store *FencedStore
	warn  sync.Once
}

// NewFenced returns the fenced workload; check makes the store refuse
// stale tokens (the fenced workload) or accept all (fenced-unchecked).
func NewFenced(opts MutexOptions, check bool) (*Fenced, error) {
	if err := checkShape(&opts); err != nil {
		return nil, err
	}
	return &Fenced{opts: opts, store: NewFencedStore(check)}, nil
}

// Name implements Workload.
func (w *Fenced) Name() string {
	if w.store.check {
		return "fenced"
	}
	return "fenced-unchecked"
}

// Store is the guarded resource.
func (w *Fenced) Store() *FencedStore { return w.store }

// Step implements Workload.
func (w *Fenced) Step(ctx context.Context, p *Process) error {
	key := w.opts.Key(p.Rand.Intn(w.opts.Keys))
	h, err := take(ctx, p, w.opts, key)
	if err != nil || h == nil {
		return err
	}
	lease := h.lease
	if lease.Fence == 0 {
		w.warn.Do(func() {
			p.r.cfg.Logf("workload %s: the lock hands out no fencing tokens (use --lock fenced): the store cannot refuse anything", w.Name())
		})
	}
	if err := p.Gate.Step(ctx, "hold"); err != nil {
		return err
	}
	done := resourceOp(p, history.Event{Op: history.Read, Key: key, Fence: lease.Fence})
	v, seq := w.store.Read(key, lease.Fence)
	done.done(history.OK, history.Event{Value: history.Int64(v), Seq: seq})
	if err := p.Gate.Sleep(ctx, h.work); err != nil {
		return err
	}
	if err := p.Gate.Step(ctx, "work-done"); err != nil {
		return err
	}
	done = resourceOp(p, history.Event{Op: history.Write, Key: key, Value: history.Int64(v + 1), Fence: lease.Fence})
	seq, ok := w.store.Write(key, lease.Fence, v+1)
	if ok {
		done.done(history.OK, history.Event{Value: history.Int64(v + 1), Seq: seq})
	} else {
		done.done(history.Fail, history.Event{Seq: seq, Error: "stale fencing token"})
	}
	return finish(ctx, p, lease, h.abandon, w.opts.Think)
}
