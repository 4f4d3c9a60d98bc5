package program

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/locktorture/locktorture/locks"
)

type discard struct{ io.Writer }

func (discard) Close() error { return nil }

// lineReader is the harness's side of a program with no process behind
// it: what a program prints goes straight to handle, as read does.
func lineReader(promises Promises) *Lock {
	l := &Lock{cfg: locks.Config{TTL: time.Second}, stdin: discard{io.Discard}, stderr: &tail{},
		reaped: make(chan struct{}), hello: make(chan message, 1), label: "client 0: lock program fuzz",
		pending: map[int64]*call{}, steps: map[int64]time.Time{}, leases: map[string]*locks.Lease{},
		renewals: map[int64]func(error){}, promises: promises}
	l.bg, l.cancelBg = context.WithCancel(context.Background())
	for id, kind := range map[int64]string{1: typeAcquire, 2: typeRelease, 3: typeAcquire} {
		l.pending[id] = &call{ctx: context.Background(), req: Request{Type: kind, ID: id, Key: "k", Token: "t"},
			reply: make(chan message, 1)}
	}
	return l
}

// FuzzLines feeds the harness's line reader what a program may print:
// whatever the lines, it answers each with nil or a protocol error and
// never panics or blocks. What a program prints is untrusted input, as a
// history file is.
func FuzzLines(f *testing.F) {
	for _, s := range []string{
		`{"type":"hello","protocol":1,"name":"x","version":"1","promises":{"renewal":true}}`,
		`{"type":"step","step":1,"point":"attempt","request":1}` + "\n" + `{"type":"reply","id":1,"outcome":"granted","from_step":1}`,
		`{"type":"step","step":2,"point":"attempt","request":3}` + "\n" + `{"type":"reply","id":3,"outcome":"refused","held_from_step":2,"last_write_step":9}`,
		`{"type":"renew","renewal":1,"key":"k","token":"t"}` + "\n" + `{"type":"renewed","renewal":1,"outcome":"lost"}`,
		`{"type":"reply","id":2,"outcome":"deleted"}` + "\n" + `{"type":"reply","id":2,"outcome":"deleted"}`,
		`{"type":"reply","id":1,"outcome":"granted","fence":-3,"validity_ms":-1,"from_step":77}`,
		`{"type":"hello","protocol":1,"name":"x","ttl_granularity_ms":-5}`,
		`[1,2,3]`, `{"type":null}`, `{"type":"step","step":9223372036854775807,"point":"p"}`,
		`{"type":"step","step":3,"point":"attempt","request":1,"mono_ns":"x"}`, `{"type":"step","step":4,"point":"attempt","mono_ns":1.5}`, "\x00\xff{",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, promised bool) {
		l := lineReader(Promises{Renewal: promised, Fencing: promised, Validity: promised})
		defer l.cancelBg()
		for _, line := range bytes.Split(data, []byte("\n")) {
			if err := l.handle(line, time.Now()); err != nil {
				if err.Error() == "" {
					t.Fatalf("an empty protocol error for %q", line)
				}
				return
			}
		}
	})
}
