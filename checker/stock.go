package checker

import (
	"fmt"

	"github.com/locktorture/locktorture/history"
)

// KindDoubleBuy: one user bought twice in a sale that allows one purchase
// each (the seed's 羊毛党 whose ten concurrent requests all pass the check).
const KindDoubleBuy Kind = "double-buy"

// Oversell returns the checker of the stock workload. Each sale (a buy's
// Key) has the stock its restock wrote (Value; a sale's stock is written
// once, so any restock attempt names it); ok purchases beyond it, in the
// order they returned, are an oversell each, and a user (a buy's Value)
// with a second ok purchase in the same sale is a double-buy. Purchases
// that failed or whose outcome is unknown are not counted, so neither
// anomaly can come from doubt: the sales counted surely happened.
//
// A sale idle for closeAfter TTLs is closed: its units and the count sold
// are kept, its buyers forgotten, so a purchase that comes later still
// counts against the stock, but is not judged as a double-buy.
func Oversell(opts ...Option) Checker {
	return newCarryingChecker("oversell", opts, func() carrier {
		return &sellJudge{sales: map[string]*sale{}, closed: map[string]closedSale{}}
	})
}

// closeAfter is how long, in TTLs, a sale stays open without a purchase.
const closeAfter = 10

// sellJudge carries the open sales and what is kept of the closed ones.
type sellJudge struct {
	sales  map[string]*sale
	closed map[string]closedSale
}

// sale is what the judge carries of one open sale.
type sale struct {
	units   int64
	stocked bool
	sold    int64 // ok purchases judged against the stock
	buyers  map[int64]*history.Operation
	waiting []*history.Operation // ok purchases before the stock was known
	last    int64                // the latest return of an operation of it
}

type closedSale struct{ units, sold int64 }

// sellCount is what one window counted.
type sellCount struct{ sales, sold, over, doubles, failed, unknown int64 }

func (j *sellJudge) judge(c *collector, w *Window) {
	var n sellCount
	for i := range w.Ops {
		o := &w.Ops[i]
		switch {
		case o.Op == history.Restock && o.Value != nil:
			j.restock(c, &n, o)
		case o.Op == history.Buy && o.Status == history.OK && o.Value != nil:
			n.sold++
			j.buy(c, &n, o)
		case o.Op == history.Buy && o.Status == history.Fail:
			n.failed++
		case o.Op == history.Buy:
			n.unknown++
		}
	}
	unstocked := int64(0)
	for key, sl := range j.sales {
		switch {
		case w.Final && !sl.stocked:
			unstocked++ // a sale the history never stocked: nothing to compare
		case sl.stocked && sl.last < w.Later-closeAfter*runTTL(w.Run):
			j.closed[key] = closedSale{sl.units, sl.sold}
			delete(j.sales, key)
		}
	}
	c.stat("sales", n.sales)
	c.stat("sold", n.sold)
	c.stat("oversold", n.over)
	c.stat("double_buys", n.doubles)
	c.stat("failed_buys", n.failed)
	c.stat("unknown_buys", n.unknown)
	c.stat("unstocked_sales", unstocked)
}

func (j *sellJudge) sale(key string) *sale {
	sl := j.sales[key]
	if sl == nil {
		sl = &sale{buyers: map[int64]*history.Operation{}}
		j.sales[key] = sl
	}
	return sl
}

func (j *sellJudge) restock(c *collector, n *sellCount, o *history.Operation) {
	if _, gone := j.closed[o.Key]; gone {
		return
	}
	sl := j.sale(o.Key)
	sl.last = max(sl.last, o.Return)
	if !sl.stocked {
		n.sales++
	}
	sl.units = max(sl.units, *o.Value)
	if sl.stocked {
		return
	}
	sl.stocked = true
	for _, b := range sl.waiting {
		j.count(c, n, o.Key, sl.units, &sl.sold, b)
	}
	sl.waiting = nil
}

func (j *sellJudge) buy(c *collector, n *sellCount, o *history.Operation) {
	if cs, gone := j.closed[o.Key]; gone {
		j.count(c, n, o.Key, cs.units, &cs.sold, o)
		j.closed[o.Key] = cs
		return
	}
	sl := j.sale(o.Key)
	sl.last = max(sl.last, o.Return)
	user := *o.Value
	if a, ok := sl.buyers[user]; ok {
		n.doubles++
		c.add(Anomaly{
			Kind: KindDoubleBuy, Clients: uniqueInts(a.Client, o.Client), Processes: uniqueInts(a.Process, o.Process),
			Keys: []string{o.Key}, StartNS: o.Call, EndNS: o.Return,
			Detail: fmt.Sprintf("user %d bought in %s twice: through client %d at %s and client %d at %s",
				user, o.Key, a.Client, fmtTime(a.Return), o.Client, fmtTime(o.Return)),
		})
	} else {
		sl.buyers[user] = held(o)
	}
	if !sl.stocked {
		sl.waiting = append(sl.waiting, held(o))
		return
	}
	j.count(c, n, o.Key, sl.units, &sl.sold, o)
}

// count judges one ok purchase against the stock: the sold-th unit.
func (j *sellJudge) count(c *collector, n *sellCount, key string, units int64, sold *int64, o *history.Operation) {
	*sold++
	if *sold <= units {
		return
	}
	n.over++
	c.add(Anomaly{
		Kind: KindOversell, Clients: []int{o.Client}, Processes: []int{o.Process}, Keys: []string{key},
		StartNS: o.Call, EndNS: o.Return,
		Detail: fmt.Sprintf("client %d bought unit %d of %s at %s, which had %d units",
			o.Client, *sold, key, fmtTime(o.Return), units),
	})
}
