package checker

import (
	"cmp"
	"slices"

	"github.com/locktorture/locktorture/history"
)

// pairer pairs each operation's invocation with its completion as the
// stream reads them, for Window.Ops: it holds the invocations not
// completed yet and the operations completed since the last window.
type pairer struct {
	open map[int64]history.Event
	done []history.Operation
}

func newPairer() pairer { return pairer{open: map[int64]history.Event{}} }

// add takes an invocation or a completion; on a completion it returns the
// invocation and true.
func (p *pairer) add(e history.Event) (history.Event, bool) {
	if e.Type == history.Invoke {
		p.open[e.ID] = e
		return history.Event{}, false
	}
	inv, ok := p.open[e.ID]
	if !ok {
		return history.Event{}, false // validated input never gets here
	}
	delete(p.open, e.ID)
	p.done = append(p.done, history.Pair(inv, &e, 0))
	return inv, true
}

// later is Window.Later: the earliest call of an operation still open, or
// now (no operation is called before the latest event).
func (p *pairer) later(now int64) int64 {
	for _, e := range p.open {
		now = min(now, e.Time)
	}
	return now
}

// take returns the operations completed since the last call; final adds
// those never completed, of unknown outcome, returning at end.
func (p *pairer) take(final bool, end int64) []history.Operation {
	out := p.done
	p.done = nil
	if final {
		rest := make([]history.Event, 0, len(p.open))
		for _, e := range p.open {
			rest = append(rest, e)
		}
		slices.SortFunc(rest, func(a, b history.Event) int { return cmp.Compare(a.Index, b.Index) })
		for _, e := range rest {
			out = append(out, history.Pair(e, nil, end))
		}
		clear(p.open)
	}
	return out
}

// openResource returns, in history order, the invocations of resource
// operations never completed, for the final window's Events.
func (p *pairer) openResource() []history.Event {
	var out []history.Event
	for _, e := range p.open {
		if !e.Op.IsLock() {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b history.Event) int { return cmp.Compare(a.Index, b.Index) })
	return out
}

// held is a copy of o to carry across windows, without what no judge
// reads after its window (the attempts of an acquire).
func held(o *history.Operation) *history.Operation {
	cp := *o
	cp.Tries = nil
	return &cp
}

// inOrder is a judge's queue of operations that must be judged in an
// order a window cannot settle alone (the resource's Seq, or call order):
// it takes each window's operations and gives back, in order, those that
// no later window can precede.
type inOrder struct {
	q []*history.Operation
	// less orders the queue; ready says whether the head can be judged
	// given Window.Later.
	less  func(a, b *history.Operation) int
	ready func(o *history.Operation, later int64) bool
}

// bySeq judges a resource's operations in the order it applied them: one
// that returned by Later has every one applied before it in hand.
func bySeq() inOrder {
	return inOrder{
		less: func(a, b *history.Operation) int {
			return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.ID, b.ID))
		},
		ready: func(o *history.Operation, later int64) bool { return o.Return <= later },
	}
}

// byCall judges operations in call order: one called before Later has
// every one called before it in hand.
func byCall() inOrder {
	return inOrder{
		less: func(a, b *history.Operation) int {
			return cmp.Or(cmp.Compare(a.Call, b.Call), cmp.Compare(a.ID, b.ID))
		},
		ready: func(o *history.Operation, later int64) bool { return o.Call < later },
	}
}

// push queues o (a copy).
func (q *inOrder) push(o *history.Operation) { q.q = append(q.q, held(o)) }

// pop returns, in order, the queued operations ready at later, and keeps
// the rest.
func (q *inOrder) pop(later int64) []*history.Operation {
	slices.SortStableFunc(q.q, q.less)
	n := 0
	for n < len(q.q) && q.ready(q.q[n], later) {
		n++
	}
	out := q.q[:n:n]
	q.q = append([]*history.Operation(nil), q.q[n:]...)
	return out
}
