package history_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// FuzzDecode feeds Decode arbitrary bytes: a history file is untrusted input
// (bad input must give exit code 2 and a one-line error, never a panic), and
// whatever it accepts must be safe for the pairing functions and for every
// checker a re-check runs, and must be evidence (at least one operation).
func FuzzDecode(f *testing.F) {
	lines := func(ls ...string) string { return strings.Join(ls, "\n") + "\n" }
	seeds := []string{
		"",
		`{"t":0,"type":"info","op":"run","run":{"id":"r","lock":"token","clients":1,"keys":1,"ttl_ms":100}}`,
		lines(
			`{"t":0,"type":"info","op":"run","run":{"id":"r","lock":"token","clients":2,"keys":1,"ttl_ms":100}}`,
			`{"t":1,"type":"invoke","op":"acquire","id":1,"process":1,"key":"k","ttl_ms":100}`,
			`{"t":2,"type":"ok","op":"acquire","id":1,"process":1,"key":"k","lease":"a","ttl_ms":100,"sent":2,"attempts":1,"fence":3}`,
			`{"t":3,"type":"invoke","op":"acquire","id":3,"process":2,"key":"k","ttl_ms":100}`,
			`{"t":4,"type":"ok","op":"acquire","id":3,"process":2,"key":"k","lease":"b","ttl_ms":100,"fence":2}`,
			`{"t":5,"type":"invoke","op":"release","id":2,"process":1,"key":"k","lease":"a"}`,
			`{"t":6,"type":"ok","op":"release","id":2,"process":1,"key":"k","lease":"a","deleted":true}`,
			`{"t":7,"type":"invoke","op":"refresh","id":4,"process":2,"key":"k","lease":"b","ttl_ms":100}`),
		lines(
			`{"t":1,"type":"info","op":"fault-start","fault":"f","target":"x"}`,
			`{"t":2,"type":"invoke","op":"write","id":1,"process":1,"key":"k","value":3,"fence":1}`,
			`{"t":3,"type":"unknown","op":"write","id":1,"process":1,"key":"k","seq":1}`,
			`{"t":4,"type":"invoke","op":"nested-acquire","id":2,"process":2,"key":"k","lease":"o#1/1","ttl_ms":9007199254}`,
			`{"t":5,"type":"ok","op":"nested-acquire","id":2,"process":2,"key":"k","lease":"o#2/2","ttl_ms":9007199254,"value":2}`,
			`{"t":6,"type":"invoke","op":"enqueue","id":3,"process":3,"key":"q","value":1}`,
			`{"t":7,"type":"ok","op":"enqueue","id":3,"process":3,"key":"q","value":1,"seq":1}`,
			`{"t":8,"type":"invoke","op":"buy","id":4,"process":4,"key":"s","value":9}`,
			`{"t":9,"type":"info","op":"master-switch","target":"n2"}`,
			`{"t":9007199254740992,"type":"info","op":"fault-heal","fault":"f","target":"x"}`),
		`{"t":1,"type":"ok","op":"acquire","id":7}`,
		`{"t":9223372036854775807,"type":"invoke","op":"x","id":9223372036854775807}`,
		"{\"t\":1,\"type\":\"invoke\",\"op\":\"read\",\"id\":1}\n{\"t\":2,\"ty",
		"{\"t\":1,\"type\":\"info\",\"op\":\"crash\"}\n\x00\xff",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	checkers := checker.ForMutex(checker.MutexOptions{Linearizable: checker.LinearizableOptions{Timeout: time.Second}}).Checkers()
	checkers = append(checkers, checker.FenceRegression(), checker.Reentrant(), checker.StaleWrite(),
		checker.DuplicateWork(), checker.Oversell())
	all := checker.Compose(checkers...)
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := history.Decode(bytes.NewReader(data))
		if err != nil {
			if h != nil {
				t.Fatal("Decode returned a history with its error")
			}
			if bytes.ContainsRune([]byte(err.Error()), '\n') {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		ops := h.Operations()
		if len(ops) == 0 {
			t.Fatal("Decode accepted a history without operations")
		}
		for _, o := range ops {
			if o.Return < o.Call || o.Call < 0 || o.Return > history.MaxTime {
				t.Fatalf("operation %d: call %d, return %d", o.ID, o.Call, o.Return)
			}
			if o.TTL < 0 || o.TTL > time.Duration(history.MaxTime) {
				t.Fatalf("operation %d: ttl %v", o.ID, o.TTL)
			}
		}
		for _, w := range h.Faults() {
			if w.End < w.Start {
				t.Fatalf("fault window ends before it starts: %+v", w)
			}
		}
		_ = h.Infos()
		rep := all.Report(context.Background(), h)
		checker.MarkAfterSwitch(h, &rep, 0)
		switch rep.Verdict {
		case checker.Valid, checker.Invalid, checker.Unknown:
		default:
			t.Fatalf("verdict %q", rep.Verdict)
		}
	})
}
