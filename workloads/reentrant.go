package workloads

import (
	"context"
	"time"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/locks"
)

// ReentrantOptions shape the reentrant workload.
type ReentrantOptions struct {
	MutexOptions
	// MaxDepth bounds the nesting: each hold nests to a depth drawn from
	// 1..MaxDepth. Zero means 3.
	MaxDepth int
}

// Reentrant is the reentrant workload, seed 000's 可重入性 example: foo()
// takes the lock and calls bar(), which takes the same lock again. Each
// iteration takes the key (the outer acquire), reads the counter, nests
// further acquires of the same key to a random depth, releases them
// innermost first, writes the counter back plus one and releases the outer
// hold.
//
// Only the outer acquire and release are the history's acquire and release,
// so the mutual-exclusion and linearizability checkers judge owners, not
// nesting levels; the nested calls are recorded as nested-acquire and
// nested-release, with the count the lock reported (in the lease token and,
// for releases, as Value) for the reentrant checker's counting model. With
// a lock that is not reentrant the nested acquire waits for itself until
// the lock's wait runs out: the deadlock the seed describes.
type Reentrant struct {
	opts    ReentrantOptions
	counter *Counter
}

// NewReentrant returns the reentrant workload.
func NewReentrant(opts ReentrantOptions) (*Reentrant, error) {
	if err := checkShape(&opts.MutexOptions); err != nil {
		return nil, err
	}
	if err := orDefault(&opts.MaxDepth, 3, 100, "nesting depth"); err != nil {
		return nil, err
	}
	return &Reentrant{opts: opts, counter: NewCounter()}, nil
}

// Name implements Workload.
func (w *Reentrant) Name() string { return "reentrant" }

// Step implements Workload.
func (w *Reentrant) Step(ctx context.Context, p *Process) error {
	o := w.opts.MutexOptions
	key := o.Key(p.Rand.Intn(o.Keys))
	depth := 1 + p.Rand.Intn(w.opts.MaxDepth)
	h, err := take(ctx, p, o, key)
	if err != nil || h == nil {
		return err
	}
	outer := h.lease
	if err := p.Gate.Step(ctx, "hold"); err != nil {
		return err
	}
	done := resourceOp(p, history.Event{Op: history.Read, Key: key})
	v := w.counter.Read(key)
	done.done(history.OK, history.Event{Value: history.Int64(v)})

	// Every level works an equal share of the hold.
	share := h.work / time.Duration(depth)
	var nested []*locks.Lease
	for d := 2; d <= depth; d++ {
		if err := p.Gate.Sleep(ctx, share); err != nil {
			return err
		}
		l, err := nestedAcquire(ctx, p, key)
		if err != nil {
			return err
		}
		if l == nil {
			break // not granted, or unknown: stop nesting, unwind
		}
		nested = append(nested, l)
	}
	if err := p.Gate.Sleep(ctx, share); err != nil {
		return err
	}
	for i := len(nested) - 1; i >= 0; i-- {
		if err := countedRelease(ctx, p, nested[i], history.NestedRelease); err != nil {
			return err
		}
	}
	if err := p.Gate.Step(ctx, "work-done"); err != nil {
		return err
	}
	done = resourceOp(p, history.Event{Op: history.Write, Key: key, Value: history.Int64(v + 1)})
	seq, clean := w.counter.Write(key, v+1)
	done.done(history.OK, history.Event{Value: history.Int64(v + 1), Seq: seq})
	if !clean {
		p.r.stats.Overlaps.Add(1)
	}
	if h.abandon {
		outer.StopRenewal()
		return ErrAbandon
	}
	if err := countedRelease(ctx, p, outer, history.Release); err != nil {
		return err
	}
	if o.Think > 0 {
		return p.Gate.Sleep(ctx, o.Think)
	}
	return nil
}

// nestedAcquire takes key again for a process that holds it and records it
// as nested-acquire. Like Acquire it returns a nil lease when not acquired
// or unknown, and an error only when the process died.
func nestedAcquire(ctx context.Context, p *Process, key string) (*locks.Lease, error) {
	return acquire(ctx, p, key, history.NestedAcquire, 0)
}

// countedRelease releases lease and records op (release or nested-release)
// with whether the key was deleted and, for a lock that counts holds, the
// count it reported left (Value; -1: the key no longer held the owner).
// It returns an error only when the process died.
func countedRelease(ctx context.Context, p *Process, lease *locks.Lease, op history.Op) error {
	r := p.r
	inv := p.Invoke(history.Event{Op: op, Key: lease.Key, Lease: lease.Token})
	if op == history.Release {
		// Only the outermost release lets the key go: the step the faults
		// that aim at releases wait for.
		p.observeReleasing(lease)
		defer p.observeReleased(lease)
		r.unhold(lease.Key, lease.Token)
	}
	var deleted bool
	var left *int64
	var err error
	if cr, ok := p.Lock.(locks.CountReleaser); ok {
		var n int64
		n, err = cr.ReleaseCount(ctx, lease)
		deleted, left = n == 0, history.Int64(n)
	} else {
		rctx, cancel := context.WithTimeout(ctx, ReleaseBound(r.cfg.TTL))
		deleted, err = p.Lock.Release(rctx, lease)
		cancel()
	}
	r.stats.Ops.Add(1)
	if died(err) {
		p.Died(inv, err, history.Event{})
		return err
	}
	if err != nil {
		p.Complete(inv, history.Unknown, history.Event{Error: err.Error()})
		return nil
	}
	p.Complete(inv, history.OK, history.Event{Deleted: history.Bool(deleted), Value: left})
	return nil
}
