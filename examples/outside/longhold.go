package main

import (
	"context"
	"fmt"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// kindLongHold is the outside checker's anomaly kind: a matrix cell of
// torture-outside may expect it, since the entry declares it.
const kindLongHold checker.Kind = "long-hold"

// longHolds flags a hold longer than the TTL, the kind of house rule a team
// gates on: work that outlived its lease, whether or not another client
// happened to walk in. It streams (checker.Windowed): a run judges it window
// by window, carrying each process's open hold across the cuts, in bounded
// memory.
var longHolds = checker.Entry{Name: "long-holds",
	Summary: "outside example: a hold longer than the TTL (long-hold)",
	Kinds:   map[checker.Kind][]checker.Class{kindLongHold: nil},
	New:     func(checker.MutexOptions) checker.Checker { return longHold{} }}

type longHold struct{}

func (longHold) Name() string { return "long-holds" }

// Check judges a whole history as one window.
func (c longHold) Check(ctx context.Context, h *history.History) checker.Result {
	return c.Start().Judge(ctx, checker.WholeWindow(h))
}

// Start implements checker.Windowed.
func (longHold) Start() checker.Judge { return &holds{open: map[int]int64{}} }

// holds is what the checker carries across windows: when each process's
// hold began (the return of its ok acquire).
type holds struct{ open map[int]int64 }

func (j *holds) Judge(_ context.Context, w *checker.Window) checker.Result {
	res := checker.Result{Checker: "long-holds", Verdict: checker.Valid, Anomalies: []checker.Anomaly{}, Count: map[checker.Kind]int{}}
	if w.Run == nil {
		return res
	}
	ttl := w.Run.TTL()
	for _, op := range w.Ops {
		if op.Op == history.Acquire && op.Status == history.OK {
			j.open[op.Process] = op.Return
			continue
		}
		began, held := j.open[op.Process]
		if op.Op != history.Release || !held {
			continue
		}
		delete(j.open, op.Process)
		if d := time.Duration(op.Call - began); d > ttl {
			res.Count[kindLongHold]++
			res.Anomalies = append(res.Anomalies, checker.Anomaly{Kind: kindLongHold, Clients: []int{op.Client},
				Keys: []string{op.Key}, StartNS: began, EndNS: op.Call, Severity: checker.SeveritySafety,
				Detail: fmt.Sprintf("client %d held %s for %v, longer than its %v TTL", op.Client, op.Key, d.Round(time.Millisecond), ttl)})
		}
	}
	if len(res.Anomalies) > 0 {
		res.Verdict = checker.Invalid
	}
	return res
}
