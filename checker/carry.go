package checker

import (
	"cmp"
	"slices"

	"github.com/locktorture/locktorture/history"
)

// What the judges of the resource checkers carry from one window to the
// next: copies of operations, and queues of those a window cannot judge
// alone.

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
