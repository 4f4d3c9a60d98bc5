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
// happened to walk in.
var longHolds = checker.Entry{Name: "long-holds",
	Summary: "outside example: a hold longer than the TTL (long-hold)",
	Kinds:   map[checker.Kind][]checker.Class{kindLongHold: nil},
	New:     func(o checker.MutexOptions) checker.Checker { return longHold{} }}

type longHold struct{}

func (longHold) Name() string { return "long-holds" }

func (c longHold) Check(_ context.Context, h *history.History) checker.Result {
	res := checker.Result{Checker: c.Name(), Verdict: checker.Valid, Anomalies: []checker.Anomaly{}, Count: map[checker.Kind]int{}}
	var ttl time.Duration
	if h.Run != nil {
		ttl = h.Run.TTL()
	}
	acquired := map[int]history.Operation{} // by process
	for _, op := range h.Operations() {
		switch {
		case op.Op == history.Acquire && op.Status == history.OK:
			acquired[op.Process] = op
		case op.Op == history.Release:
			a, ok := acquired[op.Process]
			delete(acquired, op.Process)
			if !ok || ttl == 0 || time.Duration(op.Call-a.Return) <= ttl {
				continue
			}
			res.Count[kindLongHold]++
			res.Anomalies = append(res.Anomalies, checker.Anomaly{Kind: kindLongHold, Clients: []int{op.Client},
				Keys: []string{op.Key}, StartNS: a.Return, EndNS: op.Call, Severity: checker.SeveritySafety,
				Detail: fmt.Sprintf("client %d held %s for %v, longer than its %v TTL", op.Client, op.Key,
					time.Duration(op.Call-a.Return).Round(time.Millisecond), ttl)})
		}
	}
	if len(res.Anomalies) > 0 {
		res.Verdict = checker.Invalid
	}
	return res
}
