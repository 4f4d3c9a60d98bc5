package history

import (
	"bytes"
	"testing"
)

// FuzzDecode feeds Decode arbitrary bytes: a history file is untrusted input
// (bad input must give exit code 2 and a one-line error, never a panic), and
// what it accepts must be safe for the pairing functions the checkers call.
func FuzzDecode(f *testing.F) {
	seeds := []string{
		"",
		`{"t":0,"type":"info","op":"run","run":{"id":"r","lock":"token","clients":1,"keys":1,"ttl_ms":100}}`,
		lines(
			`{"t":1,"type":"invoke","op":"acquire","id":1,"process":1,"key":"k","ttl_ms":100}`,
			`{"t":2,"type":"ok","op":"acquire","id":1,"process":1,"key":"k","lease":"a"}`,
			`{"t":3,"type":"invoke","op":"release","id":2,"process":1,"key":"k","lease":"a"}`,
			`{"t":4,"type":"ok","op":"release","id":2,"process":1,"key":"k","lease":"a","deleted":true}`),
		lines(
			`{"t":1,"type":"info","op":"fault-start","fault":"f","target":"x"}`,
			`{"t":2,"type":"invoke","op":"write","id":1,"process":1,"value":3}`,
			`{"t":3,"type":"unknown","op":"write","id":1,"process":1}`,
			`{"t":4,"type":"info","op":"fault-heal","fault":"f","target":"x"}`),
		`{"t":1,"type":"ok","op":"acquire","id":7}`,
		`{"t":9223372036854775807,"type":"invoke","op":"x","id":9223372036854775807}`,
		"{\"t\":1,\"type\":\"info\",\"op\":\"crash\"}\n\x00\xff",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Decode(bytes.NewReader(data))
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
		for _, o := range ops {
			if o.Return < o.Call {
				t.Fatalf("operation %d returns before its call", o.ID)
			}
		}
		for _, w := range h.Faults() {
			if w.End < w.Start {
				t.Fatalf("fault window ends before it starts: %+v", w)
			}
		}
		_ = h.Infos()
		_ = h.End()
	})
}
