package histgen

import (
	"sort"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// Operations of the resource workloads written by hand.

// Op is one hand-written operation for the resource, fence and reentrant
// checkers' tests; times are milliseconds.
type Op struct {
	Client, Proc int
	Op           history.Op
	Key, Lease   string
	Fence        int64
	Value        *int64
	Seq          int64
	Deleted      *bool
	Call, Ret    float64
	Status       history.Type
}

// Ops lays ops out as invocation and completion events, in time
// order, and validates them as a history file is validated.
func Ops(t testing.TB, ttlMillis int64, ops ...Op) *history.History {
	t.Helper()
	var evs []history.Event
	for i, o := range ops {
		st := o.Status
		if st == "" {
			st = history.OK
		}
		key := o.Key
		if key == "" {
			key = "lock:0"
		}
		inv := history.Event{Time: int64(o.Call * 1e6), Type: history.Invoke, Op: o.Op, ID: int64(i + 1),
			Process: o.Proc, Client: o.Client, Key: key, Lease: o.Lease, Fence: o.Fence, Value: o.Value, TTLMillis: ttlMillis}
		done := inv
		done.Time, done.Type, done.Seq, done.Deleted = int64(o.Ret*1e6), st, o.Seq, o.Deleted
		if o.Op == history.Release && st == history.OK && o.Deleted == nil {
			done.Deleted = history.Bool(o.Value != nil && *o.Value == 0)
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

// I64 points at v.
func I64(v int64) *int64 { return &v }
