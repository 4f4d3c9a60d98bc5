package checker

import (
	"context"
	"fmt"
	"sort"

	"github.com/locktorture/locktorture/history"
)

// KindDoubleBuy: one user bought twice in a sale that allows one purchase
// each (the seed's 羊毛党 whose ten concurrent requests all pass the check).
const KindDoubleBuy Kind = "double-buy"

// StaleWrite returns the checker of a fenced resource: reads and writes
// that carry a fencing token (Fence) and the resource's own order (Seq).
// In that order, a write the resource accepted although it had already
// seen a higher token, on a read or an accepted write, is a stale write:
// a holder whose lease had run out changed the resource after a newer
// holder had touched it. Writes the resource refused (fail) are what
// fencing is for; the result's stats count them.
func StaleWrite(opts ...Option) Checker { return &staleWrite{s: newSettings(opts)} }

type staleWrite struct{ s settings }

func (*staleWrite) Name() string { return "stale-write" }

func (w *staleWrite) Check(_ context.Context, h *history.History) Result {
	c := newCollector(w.Name(), w.s)
	perKey := map[string][]*history.Operation{}
	ops := h.Operations()
	for i := range ops {
		o := &ops[i]
		if (o.Op == history.Read || o.Op == history.Write) && o.Fence != 0 && o.Seq > 0 && o.Status != history.Unknown {
			perKey[o.Key] = append(perKey[o.Key], o)
		}
	}
	var writes, accepted, rejected, stale int64
	for _, key := range sortedKeys(perKey) {
		seq := perKey[key]
		sort.SliceStable(seq, func(i, j int) bool { return seq[i].Seq < seq[j].Seq })
		var top *history.Operation // the accepted request with the highest token so far
		for _, o := range seq {
			if o.Op == history.Write {
				writes++
				if o.Status != history.OK {
					rejected++
					continue
				}
				accepted++
				if top != nil && o.Fence < top.Fence {
					stale++
					c.add(staleAnomaly(key, o, top))
				}
			}
			if o.Status == history.OK && (top == nil || o.Fence > top.Fence) {
				top = o
			}
		}
	}
	c.stat("writes", writes)
	c.stat("accepted", accepted)
	c.stat("rejected", rejected)
	c.stat("stale", stale)
	return c.result()
}

func staleAnomaly(key string, w, top *history.Operation) Anomaly {
	return Anomaly{
		Kind:      KindStaleWrite,
		Clients:   uniqueInts(w.Client, top.Client),
		Processes: uniqueInts(w.Process, top.Process),
		Keys:      []string{key},
		Leases:    []string{},
		StartNS:   w.Call,
		EndNS:     w.Return,
		Detail: fmt.Sprintf("the resource accepted client %d's write to %s at %s with fencing token %d (request %d) after client %d's %s with token %d (request %d)",
			w.Client, key, fmtTime(w.Return), w.Fence, w.Seq, top.Client, top.Op, top.Fence, top.Seq),
	}
}

// DuplicateWork returns the checker of the batch workload: every task
// (enqueue's Value) may go on the queue of its key once; each further ok
// enqueue of it is duplicate work, two schedulers having pulled the same
// pending tasks at once.
func DuplicateWork(opts ...Option) Checker { return &duplicateWork{s: newSettings(opts)} }

type duplicateWork struct{ s settings }

func (*duplicateWork) Name() string { return "duplicate-work" }

func (d *duplicateWork) Check(_ context.Context, h *history.History) Result {
	c := newCollector(d.Name(), d.s)
	type task struct {
		key string
		id  int64
	}
	first := map[task]*history.Operation{}
	ops := h.Operations()
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Return < ops[j].Return })
	var enqueued, dups int64
	for i := range ops {
		o := &ops[i]
		if o.Op != history.Enqueue || o.Status != history.OK || o.Value == nil {
			continue
		}
		enqueued++
		t := task{o.Key, *o.Value}
		a, seen := first[t]
		if !seen {
			first[t] = o
			continue
		}
		dups++
		c.add(Anomaly{
			Kind:      KindDuplicateWork,
			Clients:   uniqueInts(a.Client, o.Client),
			Processes: uniqueInts(a.Process, o.Process),
			Keys:      []string{o.Key},
			StartNS:   o.Call,
			EndNS:     o.Return,
			Detail: fmt.Sprintf("task %d of %s was enqueued by client %d at %s and again by client %d at %s",
				t.id, o.Key, a.Client, fmtTime(a.Return), o.Client, fmtTime(o.Return)),
		})
	}
	c.stat("enqueued", enqueued)
	c.stat("tasks", int64(len(first)))
	c.stat("duplicates", dups)
	return c.result()
}

// Oversell returns the checker of the stock workload. Each sale (a buy's
// Key) has the stock its restock wrote (Value; a sale's stock is written
// once, so any restock attempt names it); ok purchases beyond it are an
// oversell each, and a user (a buy's Value) with a second ok purchase in
// the same sale is a double-buy. Purchases that failed or whose outcome is
// unknown are not counted, so neither anomaly can come from doubt: the
// sales counted surely happened.
func Oversell(opts ...Option) Checker { return &oversell{s: newSettings(opts)} }

type oversell struct{ s settings }

func (*oversell) Name() string { return "oversell" }

func (s *oversell) Check(_ context.Context, h *history.History) Result {
	c := newCollector(s.Name(), s.s)
	supply := map[string]int64{}
	sales := map[string][]*history.Operation{}
	ops := h.Operations()
	var failed, unknown int64
	for i := range ops {
		o := &ops[i]
		switch {
		case o.Op == history.Restock && o.Value != nil:
			supply[o.Key] = max(supply[o.Key], *o.Value)
		case o.Op == history.Buy && o.Status == history.OK && o.Value != nil:
			sales[o.Key] = append(sales[o.Key], o)
		case o.Op == history.Buy && o.Status == history.Fail:
			failed++
		case o.Op == history.Buy:
			unknown++
		}
	}
	var sold, over, doubles, unstocked int64
	for _, key := range sortedKeys(sales) {
		ss := sales[key]
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].Return < ss[j].Return })
		sold += int64(len(ss))
		units, stocked := supply[key]
		if !stocked {
			unstocked++ // a sale the history never stocked: nothing to compare
		}
		buyers := map[int64]*history.Operation{}
		for n, o := range ss {
			if stocked && int64(n) >= units {
				over++
				c.add(Anomaly{
					Kind: KindOversell, Clients: []int{o.Client}, Processes: []int{o.Process}, Keys: []string{key},
					StartNS: o.Call, EndNS: o.Return,
					Detail: fmt.Sprintf("client %d bought unit %d of %s at %s, which had %d units",
						o.Client, n+1, key, fmtTime(o.Return), units),
				})
			}
			user := *o.Value
			if a, ok := buyers[user]; ok {
				doubles++
				c.add(Anomaly{
					Kind: KindDoubleBuy, Clients: uniqueInts(a.Client, o.Client), Processes: uniqueInts(a.Process, o.Process),
					Keys: []string{key}, StartNS: o.Call, EndNS: o.Return,
					Detail: fmt.Sprintf("user %d bought in %s twice: through client %d at %s and client %d at %s",
						user, key, a.Client, fmtTime(a.Return), o.Client, fmtTime(o.Return)),
				})
				continue
			}
			buyers[user] = o
		}
	}
	c.stat("sales", int64(len(supply)))
	c.stat("sold", sold)
	c.stat("oversold", over)
	c.stat("double_buys", doubles)
	c.stat("failed_buys", failed)
	c.stat("unknown_buys", unknown)
	c.stat("unstocked_sales", unstocked)
	return c.result()
}
