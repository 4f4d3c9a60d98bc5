package checker

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/locktorture/locktorture/history"
)

// rop is one hand-written operation for the resource, fence and reentrant
// checkers' tests; times are milliseconds.
type rop struct {
	client, proc int
	op           history.Op
	key, lease   string
	fence        int64
	value        *int64
	seq          int64
	deleted      *bool
	call, ret    float64
	status       history.Type
}

// opsHistory lays rops out as invocation and completion events, in time
// order, and validates them as a history file is validated.
func opsHistory(t *testing.T, ttlMillis int64, ops ...rop) *history.History {
	t.Helper()
	var evs []history.Event
	for i, o := range ops {
		st := o.status
		if st == "" {
			st = history.OK
		}
		key := o.key
		if key == "" {
			key = "lock:0"
		}
		inv := history.Event{Time: int64(o.call * 1e6), Type: history.Invoke, Op: o.op, ID: int64(i + 1),
			Process: o.proc, Client: o.client, Key: key, Lease: o.lease, Fence: o.fence, Value: o.value, TTLMillis: ttlMillis}
		done := inv
		done.Time, done.Type, done.Seq, done.Deleted = int64(o.ret*1e6), st, o.seq, o.deleted
		if o.op == history.Release && st == history.OK && o.deleted == nil {
			done.Deleted = history.Bool(o.value != nil && *o.value == 0)
		}
		evs = append(evs, inv, done)
	}
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].Time != evs[j].Time {
			return evs[i].Time < evs[j].Time
		}
		return evs[i].Type != history.Invoke && evs[j].Type == history.Invoke
	})
	all := []history.Event{{Type: history.Info, Op: "run", Run: &history.RunInfo{ID: "t", Lock: "t", Clients: 4, Keys: 1, TTLMillis: ttlMillis}}}
	for i := range evs {
		evs[i].Index = int64(i + 1)
		all = append(all, evs[i])
	}
	h, err := history.FromEvents(all)
	if err != nil {
		t.Fatalf("hand-written history is invalid: %v", err)
	}
	return h
}

func i64(v int64) *int64 { return &v }

// expectKinds runs c on h and checks its count of each kind.
func expectKinds(t *testing.T, c Checker, h *history.History, want map[Kind]int) Result {
	t.Helper()
	res := c.Check(context.Background(), h)
	for k, n := range want {
		if res.Count[k] != n {
			t.Errorf("%s: %d %s, want %d; anomalies %+v", c.Name(), res.Count[k], k, n, res.Anomalies)
		}
	}
	total := 0
	for _, n := range want {
		total += n
	}
	if wantVerdict := map[bool]Verdict{true: Invalid, false: Valid}[total > 0]; res.Verdict != wantVerdict {
		t.Errorf("%s: verdict %s, want %s (counts %v)", c.Name(), res.Verdict, wantVerdict, res.Count)
	}
	return res
}

func TestStaleWrite(t *testing.T) {
	// A (token 1) reads, pauses; B (token 2) reads and writes; A writes.
	paused := func(aStatus history.Type) *history.History {
		return opsHistory(t, 300,
			rop{client: 0, proc: 1, op: history.Read, fence: 1, value: i64(0), seq: 1, call: 1, ret: 2},
			rop{client: 1, proc: 2, op: history.Read, fence: 2, value: i64(0), seq: 2, call: 10, ret: 11},
			rop{client: 1, proc: 2, op: history.Write, fence: 2, value: i64(1), seq: 3, call: 12, ret: 13},
			rop{client: 0, proc: 1, op: history.Write, fence: 1, value: i64(1), seq: 4, call: 20, ret: 21, status: aStatus},
		)
	}
	t.Run("checked store refuses the paused holder", func(t *testing.T) {
		res := expectKinds(t, StaleWrite(), paused(history.Fail), map[Kind]int{KindStaleWrite: 0})
		if res.Stats["rejected"] != 1 || res.Stats["accepted"] != 1 {
			t.Errorf("stats %v, want 1 rejected, 1 accepted", res.Stats)
		}
	})
	t.Run("unchecked store takes the stale write", func(t *testing.T) {
		res := expectKinds(t, StaleWrite(), paused(history.OK), map[Kind]int{KindStaleWrite: 1})
		if a := res.Anomalies[0]; len(a.Clients) != 2 || a.Clients[0] != 0 {
			t.Errorf("anomaly %+v should name the stale writer first", a)
		}
	})
	t.Run("a stale read alone is harmless, and tokens equal to the highest pass", func(t *testing.T) {
		h := opsHistory(t, 300,
			rop{client: 1, proc: 2, op: history.Read, fence: 2, value: i64(0), seq: 1, call: 1, ret: 2},
			rop{client: 0, proc: 1, op: history.Read, fence: 1, value: i64(0), seq: 2, call: 3, ret: 4},
			rop{client: 1, proc: 2, op: history.Write, fence: 2, value: i64(1), seq: 3, call: 5, ret: 6},
			rop{client: 1, proc: 2, op: history.Write, fence: 2, value: i64(2), seq: 4, call: 7, ret: 8},
			// No token: not judged.
			rop{client: 2, proc: 3, op: history.Write, value: i64(3), seq: 5, call: 9, ret: 10},
		)
		expectKinds(t, StaleWrite(), h, map[Kind]int{KindStaleWrite: 0})
	})
}

func TestFenceRegression(t *testing.T) {
	acq := func(client int, fence int64, call, ret float64) rop {
		return rop{client: client, proc: client + 1, op: history.Acquire, lease: fmt.Sprintf("l%d-%d", client, fence), fence: fence, call: call, ret: ret}
	}
	cases := []struct {
		name string
		ops  []rop
		want int
	}{
		{"increasing", []rop{acq(0, 1, 0, 1), acq(1, 2, 2, 3), acq(2, 5, 4, 5)}, 0},
		{"concurrent acquires may come in either order", []rop{acq(0, 2, 0, 5), acq(1, 1, 1, 3)}, 0},
		{"backwards after a failover", []rop{acq(0, 7, 0, 1), acq(1, 8, 2, 3), acq(2, 6, 10, 11), acq(3, 7, 12, 13)}, 2},
		{"repeated token", []rop{acq(0, 4, 0, 1), acq(1, 4, 2, 3)}, 1},
		{"no tokens", []rop{acq(0, 0, 0, 1), acq(1, 0, 2, 3)}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectKinds(t, FenceRegression(), opsHistory(t, 300, tc.ops...), map[Kind]int{KindFenceRegression: tc.want})
		})
	}
}

func TestDuplicateWork(t *testing.T) {
	enq := func(client int, task int64, at float64) rop {
		return rop{client: client, proc: client + 1, op: history.Enqueue, value: i64(task), call: at, ret: at + 0.1}
	}
	h := opsHistory(t, 300,
		enq(0, 1, 1), enq(0, 2, 2), enq(0, 3, 3),
		// Client 1 pulled the same batch while client 0's lease ran out.
		enq(1, 2, 4), enq(1, 3, 5),
		enq(1, 4, 6),
		rop{client: 2, proc: 3, op: history.Enqueue, key: "lock:1", value: i64(1), call: 7, ret: 8}, // other table
	)
	res := expectKinds(t, DuplicateWork(), h, map[Kind]int{KindDuplicateWork: 2})
	if res.Stats["tasks"] != 5 || res.Stats["enqueued"] != 7 {
		t.Errorf("stats %v", res.Stats)
	}
}

func TestOversell(t *testing.T) {
	const sale = "sale:lock:0:1:stock"
	buy := func(client int, user int64, at float64, st history.Type) rop {
		return rop{client: client, proc: client + 1, op: history.Buy, key: sale, value: i64(user), call: at, ret: at + 1, status: st}
	}
	restock := rop{client: 0, proc: 9, op: history.Restock, key: sale, value: i64(2), call: 0, ret: 0.5}
	t.Run("within stock", func(t *testing.T) {
		h := opsHistory(t, 300, restock, buy(0, 1, 1, history.OK), buy(1, 2, 3, history.OK),
			buy(2, 3, 5, history.Fail), buy(3, 1, 7, history.Fail), buy(0, 4, 9, history.Unknown))
		res := expectKinds(t, Oversell(), h, map[Kind]int{KindOversell: 0, KindDoubleBuy: 0})
		if res.Stats["sold"] != 2 || res.Stats["unknown_buys"] != 1 || res.Stats["failed_buys"] != 2 {
			t.Errorf("stats %v", res.Stats)
		}
	})
	t.Run("two holders sell the last unit twice", func(t *testing.T) {
		h := opsHistory(t, 300, restock, buy(0, 1, 1, history.OK), buy(1, 2, 3, history.OK), buy(2, 3, 3.5, history.OK))
		expectKinds(t, Oversell(), h, map[Kind]int{KindOversell: 1, KindDoubleBuy: 0})
	})
	t.Run("one user served twice", func(t *testing.T) {
		h := opsHistory(t, 300, restock, buy(0, 1, 1, history.OK), buy(1, 1, 1.5, history.OK))
		expectKinds(t, Oversell(), h, map[Kind]int{KindOversell: 0, KindDoubleBuy: 1})
	})
	t.Run("a sale the history never stocked is not judged", func(t *testing.T) {
		h := opsHistory(t, 300, buy(0, 1, 1, history.OK), buy(1, 2, 3, history.OK), buy(2, 3, 5, history.OK))
		res := expectKinds(t, Oversell(), h, map[Kind]int{KindOversell: 0})
		if res.Stats["unstocked_sales"] != 1 {
			t.Errorf("stats %v", res.Stats)
		}
	})
}

// A run of hours starts a sale every few purchases: the stream closes a
// sale idle for closeAfter TTLs and forgets it forgetAfter TTLs after, so
// what it carries stays bounded, while a late purchase of a sale closed
// but not yet forgotten still counts against its stock.
func TestOversellForgetsOldSales(t *testing.T) {
	var ops []rop
	for i := range 200 { // a sale every 5 ms of a 10 ms TTL: 100 TTLs
		key := fmt.Sprintf("sale:%d:stock", i)
		at := float64(i) * 5
		ops = append(ops, rop{client: 0, proc: 1, op: history.Restock, key: key, value: i64(2), call: at, ret: at + 0.1},
			rop{client: 1, proc: 2, op: history.Buy, key: key, value: i64(1), call: at + 1, ret: at + 1.1},
			rop{client: 2, proc: 3, op: history.Buy, key: key, value: i64(2), call: at + 2, ret: at + 2.1})
	}
	// Sale 100 closed 10 TTLs after its last purchase at 502 ms; a third
	// unit of it sold at 702 ms, 20 TTLs after that purchase (closed, not
	// yet forgotten), is an oversell.
	ops = append(ops, rop{client: 3, proc: 4, op: history.Buy, key: "sale:100:stock", value: i64(3), call: 650, ret: 702})
	h := opsHistory(t, 10, ops...)
	s, err := NewStream(Builtin(), []string{"oversell"}, MutexOptions{MaxAnomalies: -1}, StreamOptions{Window: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s.Add(ctx, history.Event{Type: history.Info, Op: history.RunOp, Run: h.Run})
	for _, e := range h.Events {
		s.Add(ctx, e)
	}
	rep := s.Close(ctx)
	var res Result
	for _, r := range rep.Results {
		if r.Checker == "oversell" {
			res = r
		}
	}
	if res.Count[KindOversell] != 1 {
		t.Errorf("oversells %d, want the late third unit of sale 100: %s", res.Count[KindOversell], dump(res.Anomalies))
	}
	// Sales idle since before 30 TTLs ago at the last window are gone.
	if f := res.Stats["forgotten_sales"]; f < 100 || f > 180 {
		t.Errorf("forgotten_sales %d, want most of the 200 sales", f)
	}
	whole := Oversell().Check(ctx, h)
	if whole.Count[KindOversell] != 1 {
		t.Errorf("whole check: oversells %d, want 1", whole.Count[KindOversell])
	}
}
