package checker

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/locktorture/locktorture/history"
)

// FuzzCheck runs the default checkers on whatever Decode accepts: a valid
// history can still be strange (releases of leases never acquired, refreshes
// without a key, times near the end of int64), and re-checking a history
// file must never crash the CLI.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{"t":1,"type":"invoke","op":"acquire","id":1,"process":1,"key":"k","ttl_ms":100}
{"t":2,"type":"ok","op":"acquire","id":1,"process":1,"key":"k","lease":"a","ttl_ms":100}
{"t":3,"type":"invoke","op":"acquire","id":2,"process":2,"key":"k","ttl_ms":100}
{"t":4,"type":"ok","op":"acquire","id":2,"process":2,"key":"k","lease":"b","ttl_ms":100}
{"t":5,"type":"invoke","op":"release","id":3,"process":1,"key":"k","lease":"a"}
{"t":6,"type":"ok","op":"release","id":3,"process":1,"key":"k","lease":"a","deleted":true}`,
		`{"t":1,"type":"invoke","op":"release","id":1,"process":1,"lease":"zz"}
{"t":2,"type":"ok","op":"release","id":1,"process":1,"deleted":true}
{"t":3,"type":"invoke","op":"refresh","id":2,"process":1}
{"t":9223372036854775806,"type":"unknown","op":"refresh","id":2,"process":1}`,
		`{"t":0,"type":"invoke","op":"acquire","id":1,"process":1,"ttl_ms":9223372036854775807}
{"t":1,"type":"unknown","op":"acquire","id":1,"process":1}
{"t":2,"type":"invoke","op":"write","id":2,"process":3,"value":-5,"seq":1}
{"t":3,"type":"ok","op":"write","id":2,"process":3,"value":-5,"seq":1}
{"t":4,"type":"info","op":"fault-start","fault":"f"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := history.Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		c := ForMutex(MutexOptions{Linearizable: LinearizableOptions{Timeout: time.Second}})
		rep := c.Report(context.Background(), h)
		switch rep.Verdict {
		case Valid, Invalid, Unknown:
		default:
			t.Fatalf("verdict %q", rep.Verdict)
		}
	})
}
