package workloads

import (
	"context"
	"fmt"
	"time"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/locks"
)

// drawHold draws the work time of one hold by the mutex workload's rule
// (HoldMin..HoldMax, or 7/6 of the TTL with probability Overrun) and
// whether it is an overrun. The guarded-resource workloads share it so that
// --hold and --overrun mean the same everywhere.
func drawHold(o MutexOptions, p *Process) (time.Duration, bool) {
	if o.Overrun > 0 && p.Rand.Float64() < o.Overrun {
		return o.TTL * 7 / 6, true
	}
	d := o.HoldMin
	if span := o.HoldMax - o.HoldMin; span > 0 {
		d += time.Duration(p.Rand.Int63n(int64(span) + 1))
	}
	return d, false
}

// held is one iteration's hold of its key, as take draws and takes it.
type held struct {
	lease   *locks.Lease
	work    time.Duration // the hold drawn, cut to the lease's validity (bounded)
	abandon bool          // the holder dies with the lock instead of releasing it
}

// take draws an iteration's hold and whether it abandons the lock, in the
// order every workload draws them so that a seed replays alike, then
// acquires key. Like Acquire it returns nil, and a nil error, when the
// lock was not acquired or the outcome is unknown, and an error only when
// the process died.
func take(ctx context.Context, p *Process, o MutexOptions, key string) (*held, error) {
	hold, overrun := drawHold(o, p)
	abandon := o.Abandon > 0 && p.Rand.Float64() < o.Abandon
	lease, err := acquire(ctx, p, key, history.Acquire, hold)
	if err != nil || lease == nil {
		return nil, err
	}
	return &held{lease: lease, work: bounded(hold, overrun, lease), abandon: abandon}, nil
}

// checkShape validates the options the guarded-resource workloads share.
func checkShape(o *MutexOptions) error {
	_, err := NewMutex(nil, *o)
	if o.Keys <= 0 {
		o.Keys = 1
	}
	return err
}

// orDefault checks a workload's own size option *v, which may be 1..max,
// and sets it to def where it is zero (unset); what names it in the error.
func orDefault(v *int, def, max int, what string) error {
	if *v < 0 || *v > max {
		return fmt.Errorf("%s %d: want 1..%d", what, *v, max)
	}
	if *v == 0 {
		*v = def
	}
	return nil
}

// finish ends an iteration the way every workload but reentrant (which
// counts its releases) does: an abandoning holder dies with its lock, anyone
// else releases and thinks.
func finish(ctx context.Context, p *Process, lease *locks.Lease, abandon bool, think time.Duration) error {
	if abandon {
		lease.StopRenewal()
		return ErrAbandon
	}
	if err := Release(ctx, p, lease); err != nil {
		return err
	}
	if think > 0 {
		return p.Gate.Sleep(ctx, think)
	}
	return nil
}

// resourceOp records one operation on a guarded resource: it invokes e
// and returns the open operation.
func resourceOp(p *Process, e history.Event) openOp {
	p.r.stats.ResourceOps.Add(1)
	return openOp{p: p, inv: p.Invoke(e)}
}

// openOp is an operation invoked and not yet completed.
type openOp struct {
	p   *Process
	inv history.Event
}

// done completes the operation (an unknown outcome retires the process id).
func (o openOp) done(t history.Type, with history.Event) { o.p.Complete(o.inv, t, with) }

// died completes it as unknown under the same process id: the process
// crashed in it, and the crash event that follows names that process.
func (o openOp) died(err error) { o.p.Died(o.inv, err, history.Event{}) }
