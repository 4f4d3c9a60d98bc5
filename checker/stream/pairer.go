package stream

import (
	"cmp"
	"slices"

	"github.com/locktorture/locktorture/history"
)

// Each operation paired as it completes, for the judges' checker.Window.Ops.

// pairer pairs each operation's invocation with its completion as the
// stream reads them, for checker.Window.Ops: it holds the invocations not
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

// later is checker.Window.Later: the earliest call of an operation still open, or
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
