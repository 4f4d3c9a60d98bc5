package checker

import (
	"context"
	"fmt"
	"sort"

	"github.com/locktorture/locktorture/history"
)

// LostUpdate returns the checker of the guarded counter: each holder reads
// the key's counter and writes it back plus one, and the counter numbers the
// writes it applies (Seq), so in Seq order every write must store one more
// than the write before it. A write that stores no more than its predecessor
// read the counter before that predecessor wrote: two holders were inside
// the critical section at once, whatever the lock's own story. The check
// needs no clock at all, which makes it the referee when timings are
// disputed.
func LostUpdate(opts ...Option) Checker {
	return &lostUpdate{s: newSettings(opts)}
}

type lostUpdate struct{ s settings }

func (*lostUpdate) Name() string { return "lost-update" }

func (u *lostUpdate) Check(ctx context.Context, h *history.History) Result {
	return u.checkIndex(ctx, newIndex(h))
}

func (u *lostUpdate) checkIndex(_ context.Context, ix *index) Result {
	c := newCollector(u.Name(), u.s)
	var writes, unordered, reads int64
	for _, key := range ix.keys {
		k := ix.perKey[key]
		// The counter starts where the first read found it, else at 0.
		var prev int64
		for _, i := range k.reads {
			if o := &ix.ops[i]; o.Status == history.OK && o.Value != nil {
				prev = *o.Value
				break
			}
		}
		reads += int64(len(k.reads))
		var ws []*history.Operation
		for _, i := range k.writes {
			o := &ix.ops[i]
			if o.Status != history.OK || o.Value == nil {
				continue
			}
			if o.Seq <= 0 {
				unordered++ // a resource that does not number its writes
				continue
			}
			ws = append(ws, o)
		}
		sort.SliceStable(ws, func(i, j int) bool { return ws[i].Seq < ws[j].Seq })
		writes += int64(len(ws))
		var before *history.Operation
		for _, w := range ws {
			// A write more than one ahead is not flagged: an unknown write
			// (which carries no Seq) may have been applied in between.
			if v := *w.Value; v <= prev {
				c.add(lostAnomaly(key, w, before, prev))
			}
			prev, before = *w.Value, w
		}
	}
	c.stat("keys", int64(len(ix.keys)))
	c.stat("reads", reads)
	c.stat("writes", writes)
	c.stat("writes_without_seq", unordered)
	return c.result()
}

// lostAnomaly describes write w, which stored no more than prev, the value
// the write before it (if any) had stored.
func lostAnomaly(key string, w, before *history.Operation, prev int64) Anomaly {
	v := *w.Value
	a := Anomaly{
		Kind:      KindLostUpdate,
		Clients:   []int{w.Client},
		Processes: []int{w.Process},
		Keys:      []string{key},
		Leases:    []string{},
		StartNS:   w.Call,
		EndNS:     w.Return,
	}
	if before == nil {
		a.Detail = fmt.Sprintf("client %d wrote %d to %s at %s, the first write, although the counter already stood at %d",
			w.Client, v, key, fmtTime(w.Return), prev)
		return a
	}
	a.Clients = append(a.Clients, before.Client)
	a.Processes = append(a.Processes, before.Process)
	a.StartNS = before.Call
	lost := fmt.Sprintf("both read %d, so client %d's update was lost", v-1, before.Client)
	if v < prev {
		lost = fmt.Sprintf("client %d had read a stale %d, so %d updates were lost", w.Client, v-1, prev-v+1)
	}
	a.Detail = fmt.Sprintf("client %d wrote %d to %s at %s (write %d) over client %d's %d written at %s (write %d): %s",
		w.Client, v, key, fmtTime(w.Return), w.Seq, before.Client, prev, fmtTime(before.Return), before.Seq, lost)
	return a
}
