package checker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker/internal/histgen"
	"github.com/locktorture/locktorture/history"
)

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
		return histgen.Ops(t, 300,
			histgen.Op{Client: 0, Proc: 1, Op: history.Read, Fence: 1, Value: histgen.I64(0), Seq: 1, Call: 1, Ret: 2},
			histgen.Op{Client: 1, Proc: 2, Op: history.Read, Fence: 2, Value: histgen.I64(0), Seq: 2, Call: 10, Ret: 11},
			histgen.Op{Client: 1, Proc: 2, Op: history.Write, Fence: 2, Value: histgen.I64(1), Seq: 3, Call: 12, Ret: 13},
			histgen.Op{Client: 0, Proc: 1, Op: history.Write, Fence: 1, Value: histgen.I64(1), Seq: 4, Call: 20, Ret: 21, Status: aStatus},
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
		h := histgen.Ops(t, 300,
			histgen.Op{Client: 1, Proc: 2, Op: history.Read, Fence: 2, Value: histgen.I64(0), Seq: 1, Call: 1, Ret: 2},
			histgen.Op{Client: 0, Proc: 1, Op: history.Read, Fence: 1, Value: histgen.I64(0), Seq: 2, Call: 3, Ret: 4},
			histgen.Op{Client: 1, Proc: 2, Op: history.Write, Fence: 2, Value: histgen.I64(1), Seq: 3, Call: 5, Ret: 6},
			histgen.Op{Client: 1, Proc: 2, Op: history.Write, Fence: 2, Value: histgen.I64(2), Seq: 4, Call: 7, Ret: 8},
			// No token: not judged.
			histgen.Op{Client: 2, Proc: 3, Op: history.Write, Value: histgen.I64(3), Seq: 5, Call: 9, Ret: 10},
		)
		expectKinds(t, StaleWrite(), h, map[Kind]int{KindStaleWrite: 0})
	})
}

func TestFenceRegression(t *testing.T) {
	acq := func(client int, fence int64, call, ret float64) histgen.Op {
		return histgen.Op{Client: client, Proc: client + 1, Op: history.Acquire, Lease: fmt.Sprintf("l%d-%d", client, fence), Fence: fence, Call: call, Ret: ret}
	}
	cases := []struct {
		name string
		ops  []histgen.Op
		want int
	}{
		{"increasing", []histgen.Op{acq(0, 1, 0, 1), acq(1, 2, 2, 3), acq(2, 5, 4, 5)}, 0},
		{"concurrent acquires may come in either order", []histgen.Op{acq(0, 2, 0, 5), acq(1, 1, 1, 3)}, 0},
		{"backwards after a failover", []histgen.Op{acq(0, 7, 0, 1), acq(1, 8, 2, 3), acq(2, 6, 10, 11), acq(3, 7, 12, 13)}, 2},
		{"repeated token", []histgen.Op{acq(0, 4, 0, 1), acq(1, 4, 2, 3)}, 1},
		{"no tokens", []histgen.Op{acq(0, 0, 0, 1), acq(1, 0, 2, 3)}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectKinds(t, FenceRegression(), histgen.Ops(t, 300, tc.ops...), map[Kind]int{KindFenceRegression: tc.want})
		})
	}
}

func TestDuplicateWork(t *testing.T) {
	enq := func(client int, task int64, at float64) histgen.Op {
		return histgen.Op{Client: client, Proc: client + 1, Op: history.Enqueue, Value: histgen.I64(task), Call: at, Ret: at + 0.1}
	}
	h := histgen.Ops(t, 300,
		enq(0, 1, 1), enq(0, 2, 2), enq(0, 3, 3),
		// Client 1 pulled the same batch while client 0's lease ran out.
		enq(1, 2, 4), enq(1, 3, 5),
		enq(1, 4, 6),
		histgen.Op{Client: 2, Proc: 3, Op: history.Enqueue, Key: "lock:1", Value: histgen.I64(1), Call: 7, Ret: 8}, // other table
		// Task 9 is queued before task 7, whose first enqueue is still
		// the one a duplicate names.
		enq(3, 9, 9), enq(4, 7, 10), enq(2, 7, 11),
	)
	res := expectKinds(t, DuplicateWork(), h, map[Kind]int{KindDuplicateWork: 3})
	if res.Stats["tasks"] != 7 || res.Stats["enqueued"] != 10 {
		t.Errorf("stats %v", res.Stats)
	}
	for i, want := range []string{"task 2 of lock:0 was enqueued by client 0", "task 3 of lock:0 was enqueued by client 0", "task 7 of lock:0 was enqueued by client 4"} {
		if i >= len(res.Anomalies) || !strings.HasPrefix(res.Anomalies[i].Detail, want) {
			t.Errorf("anomaly %d does not start %q: %+v", i, want, res.Anomalies)
		}
	}
}

// TestDuplicateWorkRecall: across windows, who queued a task first is kept
// for recall TTLs and then forgotten, so a long run keeps a bounded list; a
// duplicate after that still counts, saying how late it came.
func TestDuplicateWorkRecall(t *testing.T) {
	const ttl = 100 // ms
	run := &history.RunInfo{TTLMillis: ttl}
	enq := func(client int, task int64, ret int64) history.Operation {
		return history.Operation{Client: client, Process: client + 1, Op: history.Enqueue, Key: "lock:0",
			Value: histgen.I64(task), Call: ret - 1, Return: ret, Status: history.OK}
	}
	ms := func(v int64) int64 { return v * 1e6 }
	j := DuplicateWork().(Windowed).Start()
	judge := func(later int64, ops ...history.Operation) Result {
		return j.Judge(context.Background(), &Window{Run: run, Ops: ops, Later: later})
	}
	judge(ms(10), enq(0, 1, ms(1)), enq(0, 2, ms(2)))
	// Within the recall: the duplicate names the first enqueuer.
	r := judge(ms(500), enq(1, 1, ms(400)))
	if len(r.Anomalies) != 1 || !strings.HasPrefix(r.Anomalies[0].Detail, "task 1 of lock:0 was enqueued by client 0") {
		t.Fatalf("duplicate within the recall: %+v", r.Anomalies)
	}
	// Past it: once a window ends recall TTLs after task 2's first
	// enqueue, that is forgotten, and a later duplicate is counted alone.
	judge(ms(recall*ttl + 100))
	if k := j.(carryJudge).c.(*dupJudge).keys["lock:0"]; len(k.recent) != 0 {
		t.Errorf("after the recall the judge still keeps %d first enqueues", len(k.recent))
	}
	r = judge(ms(recall*ttl+300), enq(2, 2, ms(recall*ttl+200)))
	if len(r.Anomalies) != 1 || !strings.Contains(r.Anomalies[0].Detail, fmt.Sprintf("over %d TTLs after its first enqueue", recall)) {
		t.Fatalf("duplicate past the recall: %+v", r.Anomalies)
	}
}

func TestOversell(t *testing.T) {
	const sale = "sale:lock:0:1:stock"
	buy := func(client int, user int64, at float64, st history.Type) histgen.Op {
		return histgen.Op{Client: client, Proc: client + 1, Op: history.Buy, Key: sale, Value: histgen.I64(user), Call: at, Ret: at + 1, Status: st}
	}
	restock := histgen.Op{Client: 0, Proc: 9, Op: history.Restock, Key: sale, Value: histgen.I64(2), Call: 0, Ret: 0.5}
	t.Run("within stock", func(t *testing.T) {
		h := histgen.Ops(t, 300, restock, buy(0, 1, 1, history.OK), buy(1, 2, 3, history.OK),
			buy(2, 3, 5, history.Fail), buy(3, 1, 7, history.Fail), buy(0, 4, 9, history.Unknown))
		res := expectKinds(t, Oversell(), h, map[Kind]int{KindOversell: 0, KindDoubleBuy: 0})
		if res.Stats["sold"] != 2 || res.Stats["unknown_buys"] != 1 || res.Stats["failed_buys"] != 2 {
			t.Errorf("stats %v", res.Stats)
		}
	})
	t.Run("two holders sell the last unit twice", func(t *testing.T) {
		h := histgen.Ops(t, 300, restock, buy(0, 1, 1, history.OK), buy(1, 2, 3, history.OK), buy(2, 3, 3.5, history.OK))
		expectKinds(t, Oversell(), h, map[Kind]int{KindOversell: 1, KindDoubleBuy: 0})
	})
	t.Run("one user served twice", func(t *testing.T) {
		h := histgen.Ops(t, 300, restock, buy(0, 1, 1, history.OK), buy(1, 1, 1.5, history.OK))
		expectKinds(t, Oversell(), h, map[Kind]int{KindOversell: 0, KindDoubleBuy: 1})
	})
	t.Run("a sale the history never stocked is not judged", func(t *testing.T) {
		h := histgen.Ops(t, 300, buy(0, 1, 1, history.OK), buy(1, 2, 3, history.OK), buy(2, 3, 5, history.OK))
		res := expectKinds(t, Oversell(), h, map[Kind]int{KindOversell: 0})
		if res.Stats["unstocked_sales"] != 1 {
			t.Errorf("stats %v", res.Stats)
		}
	})
}
