package stream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/checker/internal/histgen"
	"github.com/locktorture/locktorture/history"
)

// What a judge carries stays bounded over a long run: old sales are forgotten.

// A run of hours starts a sale every few purchases: the stream closes a
// sale idle for closeAfter TTLs and forgets it forgetAfter TTLs after, so
// what it carries stays bounded, while a late purchase of a sale closed
// but not yet forgotten still counts against its stock.
func TestOversellForgetsOldSales(t *testing.T) {
	var ops []histgen.Op
	for i := range 200 { // a sale every 5 ms of a 10 ms TTL: 100 TTLs
		key := fmt.Sprintf("sale:%d:stock", i)
		at := float64(i) * 5
		ops = append(ops, histgen.Op{Client: 0, Proc: 1, Op: history.Restock, Key: key, Value: histgen.I64(2), Call: at, Ret: at + 0.1},
			histgen.Op{Client: 1, Proc: 2, Op: history.Buy, Key: key, Value: histgen.I64(1), Call: at + 1, Ret: at + 1.1},
			histgen.Op{Client: 2, Proc: 3, Op: history.Buy, Key: key, Value: histgen.I64(2), Call: at + 2, Ret: at + 2.1})
	}
	// Sale 100 closed 10 TTLs after its last purchase at 502 ms; a third
	// unit of it sold at 702 ms, 20 TTLs after that purchase (closed, not
	// yet forgotten), is an oversell.
	ops = append(ops, histgen.Op{Client: 3, Proc: 4, Op: history.Buy, Key: "sale:100:stock", Value: histgen.I64(3), Call: 650, Ret: 702})
	h := histgen.Ops(t, 10, ops...)
	s, err := New(checker.Builtin(), []string{"oversell"}, checker.MutexOptions{MaxAnomalies: -1}, Options{Window: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s.Add(ctx, history.Event{Type: history.Info, Op: history.RunOp, Run: h.Run})
	for _, e := range h.Events {
		s.Add(ctx, e)
	}
	rep := s.Close(ctx)
	var res checker.Result
	for _, r := range rep.Results {
		if r.Checker == "oversell" {
			res = r
		}
	}
	if res.Count[checker.KindOversell] != 1 {
		t.Errorf("oversells %d, want the late third unit of sale 100: %+v", res.Count[checker.KindOversell], res.Anomalies)
	}
	// Sales idle since before 30 TTLs ago at the last window are gone.
	if f := res.Stats["forgotten_sales"]; f < 100 || f > 180 {
		t.Errorf("forgotten_sales %d, want most of the 200 sales", f)
	}
	whole := checker.Oversell().Check(ctx, h)
	if whole.Count[checker.KindOversell] != 1 {
		t.Errorf("whole check: oversells %d, want 1", whole.Count[checker.KindOversell])
	}
}
