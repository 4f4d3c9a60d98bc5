package checker

import (
	"fmt"

	"github.com/locktorture/locktorture/history"
)

// LostUpdate returns the checker of the guarded counter: each holder reads
// the key's counter and writes it back plus one, and the counter numbers the
// writes it applies (Seq), so in Seq order every write must store one more
// than the write before it. A write that stores no more than its predecessor
// read the counter before that predecessor wrote: two holders were inside
// the critical section at once, whatever the lock's own story. The check
// needs no clock at all, which makes it the referee when timings are
// disputed. The counter starts where the earliest read found it, if that
// read was called before the first write returned, else at 0.
func LostUpdate(opts ...Option) Checker {
	return newCarryingChecker("lost-update", opts, func() carrier { return &lostJudge{keys: map[string]*lostKey{}} })
}

// lostJudge judges the counter's writes in the order the counter applied
// them (Seq), each against the value the write before it stored, which is
// all a key carries from window to window.
type lostJudge struct{ keys map[string]*lostKey }

// lostKey is what the judge carries of one counter.
type lostKey struct {
	// first is the earliest-called ok read, until the first write is
	// judged: the counter starts where it found it, if it was called
	// before that write returned, else at 0.
	first   *history.Operation
	started bool
	prev    int64
	before  *history.Operation // the last write judged
	writes  inOrder            // ok writes not judged yet
}

func (j *lostJudge) key(k string) *lostKey {
	x := j.keys[k]
	if x == nil {
		x = &lostKey{writes: bySeq()}
		j.keys[k] = x
	}
	return x
}

func (j *lostJudge) judge(c *collector, w *Window) {
	keys := int64(len(j.keys))
	var writes, unordered, reads int64
	for i := range w.Ops {
		o := &w.Ops[i]
		switch {
		case o.Op == history.Read:
			reads++
			k := j.key(o.Key)
			if o.Status == history.OK && o.Value != nil && !k.started &&
				(k.first == nil || o.Call < k.first.Call || o.Call == k.first.Call && o.ID < k.first.ID) {
				k.first = held(o)
			}
		case o.Op == history.Write && o.Status == history.OK && o.Value != nil:
			if o.Seq <= 0 {
				unordered++ // a resource that does not number its writes
				continue
			}
			j.key(o.Key).writes.push(o)
		}
	}
	for _, key := range sortedKeys(j.keys) {
		k := j.keys[key]
		for _, wr := range k.writes.pop(w.Later) {
			writes++
			if !k.started {
				k.started = true
				if k.first != nil && k.first.Call < wr.Return {
					k.prev = *k.first.Value
				}
				k.first = nil
			}
			// A write more than one ahead is not flagged: an unknown write
			// (which carries no Seq) may have been applied in between.
			if v := *wr.Value; v <= k.prev {
				c.add(lostAnomaly(key, wr, k.before, k.prev))
			}
			k.prev, k.before = *wr.Value, wr
		}
	}
	c.stat("keys", int64(len(j.keys))-keys)
	c.stat("reads", reads)
	c.stat("writes", writes)
	c.stat("writes_without_seq", unordered)
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
			w.Client, v, key, history.FormatTime(w.Return), prev)
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
		w.Client, v, key, history.FormatTime(w.Return), w.Seq, before.Client, prev, history.FormatTime(before.Return), before.Seq, lost)
	return a
}
