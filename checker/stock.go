package checker

import (
	"fmt"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/distinct"
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
// counts against the stock, but is not judged as a double-buy. A closed
// sale idle for forgetAfter TTLs is forgotten, so that a run of hours,
// which starts a sale every few purchases, is checked in bounded memory:
// a purchase that names it later (its client stood still for that long
// between choosing the sale and buying) waits for a stock it will never
// see, and counts among the unstocked sales.
func Oversell(opts ...Option) Checker {
	return newCarryingChecker("oversell", opts, func() carrier {
		return &sellJudge{sales: map[string]*sale{}, closed: map[string]*closedSale{}}
	})
}

// closeAfter and forgetAfter are how long, in TTLs, a sale stays open, and
// then closed, without a purchase.
const (
	closeAfter  = 10
	forgetAfter = 30
)

// sellJudge carries the open sales and what is kept of the closed ones,
// in the order they closed.
type sellJudge struct {
	sales     map[string]*sale
	closed    map[string]*closedSale
	closedAt  []closing
	forgotten int64
}

// sale is what the judge carries of one open sale.
type sale struct {
	units   int64
	stocked bool
	sold    int64 // ok purchases judged against the stock
	buyers  map[int64]buyer
	waiting []*history.Operation // ok purchases before the stock was known
	last    int64                // the latest return of an operation of it
}

// buyer is what a double-buy names of the first purchase.
type buyer struct {
	client, process int
	ret             int64
}

type closedSale struct{ units, sold, last int64 }

// closing is a sale's place in the order of closing.
type closing struct {
	key string
	at  int64 // its last activity when it closed
}

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
	ttl := runTTL(w.Run)
	for key, sl := range j.sales {
		switch {
		case w.Final && !sl.stocked:
			unstocked++ // a sale the history never stocked: nothing to compare
		case sl.stocked && sl.last < w.Later-closeAfter*ttl:
			j.closed[key] = &closedSale{sl.units, sl.sold, sl.last}
			j.closedAt = append(j.closedAt, closing{key, sl.last})
			delete(j.sales, key)
		}
	}
	if !w.Final {
		j.forget(w.Later - forgetAfter*ttl)
	}
	c.stat("sales", n.sales)
	c.stat("sold", n.sold)
	c.stat("oversold", n.over)
	c.stat("double_buys", n.doubles)
	c.stat("failed_buys", n.failed)
	c.stat("unknown_buys", n.unknown)
	c.stat("unstocked_sales", unstocked)
	if w.Final {
		c.stat("forgotten_sales", j.forgotten)
	}
}

// forget drops the closed sales idle since before horizon, oldest first; a
// sale a late purchase touched goes back in line at its new activity.
func (j *sellJudge) forget(horizon int64) {
	n := 0
	for _, c := range j.closedAt {
		if c.at >= horizon {
			break
		}
		n++
		if cs := j.closed[c.key]; cs != nil && cs.last > c.at {
			j.closedAt = append(j.closedAt, closing{c.key, cs.last})
			continue
		}
		delete(j.closed, c.key)
		j.forgotten++
	}
	j.closedAt = j.closedAt[n:]
}

func (j *sellJudge) sale(key string) *sale {
	sl := j.sales[key]
	if sl == nil {
		sl = &sale{buyers: map[int64]buyer{}}
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
		cs.last = max(cs.last, o.Return)
		return
	}
	sl := j.sale(o.Key)
	sl.last = max(sl.last, o.Return)
	user := *o.Value
	if a, ok := sl.buyers[user]; ok {
		n.doubles++
		c.add(Anomaly{
			Kind: KindDoubleBuy, Clients: distinct.Of(a.client, o.Client), Processes: distinct.Of(a.process, o.Process),
			Keys: []string{o.Key}, StartNS: o.Call, EndNS: o.Return,
			Detail: fmt.Sprintf("user %d bought in %s twice: through client %d at %s and client %d at %s",
				user, o.Key, a.client, history.FormatTime(a.ret), o.Client, history.FormatTime(o.Return)),
		})
	} else {
		sl.buyers[user] = buyer{o.Client, o.Process, o.Return}
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
			o.Client, *sold, key, history.FormatTime(o.Return), units),
	})
}
