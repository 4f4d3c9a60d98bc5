package history

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Decode is the gate for files that may be truncated, hand-edited or not
// histories at all: each kind of damage must come back as an error naming
// the problem, never as a panic or a silently accepted history.
func TestDecodeRejectsMalformed(t *testing.T) {
	header := `{"i":0,"t":0,"type":"info","op":"run","process":0,"client":0,"run":{"id":"r","lock":"token","clients":2,"keys":1,"ttl_ms":100,"seed":1,"started":"2024-01-01T00:00:00Z"}}`
	cases := []struct {
		name, input, want string
	}{
		{"bad json", `{"t":1,"type":"invoke"`, "line 1: not a JSON event"},
		{"not an object", `[1,2,3]`, "line 1: not a JSON event"},
		{"two values on a line", `{"t":1,"type":"info","op":"crash"} {"t":2}`, "line 1: more than one JSON value"},
		{"wrong field type", `{"t":"soon","type":"invoke","op":"acquire","id":1}`, "line 1: not a JSON event"},
		{"unknown type", `{"t":1,"type":"started","op":"acquire","id":1}`, `line 1: unknown event type "started"`},
		{"missing type", `{"t":1,"op":"acquire","id":1}`, `line 1: unknown event type ""`},
		{"missing op", `{"t":1,"type":"invoke","id":1}`, "line 1: event without op"},
		{"negative time", `{"t":-5,"type":"invoke","op":"acquire","id":1}`, "line 1: negative time"},
		{"time going back", lines(
			`{"t":10,"type":"invoke","op":"acquire","id":1,"process":1}`,
			`{"t":9,"type":"ok","op":"acquire","id":1,"process":1}`), "line 2: time 9 goes back"},
		{"completion without invocation", `{"t":1,"type":"ok","op":"acquire","id":7,"process":1}`, "operation 7, which is not open"},
		{"completion twice", lines(
			`{"t":1,"type":"invoke","op":"read","id":1,"process":1}`,
			`{"t":2,"type":"ok","op":"read","id":1,"process":1}`,
			`{"t":3,"type":"ok","op":"read","id":1,"process":1}`), "line 3: ok completion of operation 1, which is not open"},
		{"completion by another process", lines(
			`{"t":1,"type":"invoke","op":"read","id":1,"process":1}`,
			`{"t":2,"type":"ok","op":"read","id":1,"process":2}`), "line 2: completion of operation 1 does not match its invocation on line 1"},
		{"completion of another op", lines(
			`{"t":1,"type":"invoke","op":"read","id":1,"process":1}`,
			`{"t":2,"type":"ok","op":"write","id":1,"process":1}`), "does not match its invocation"},
		{"id reused", lines(
			`{"t":1,"type":"invoke","op":"read","id":1,"process":1}`,
			`{"t":2,"type":"ok","op":"read","id":1,"process":1}`,
			`{"t":3,"type":"invoke","op":"read","id":1,"process":1}`), "line 3: operation id 1 used twice"},
		{"invocation without id", `{"t":1,"type":"invoke","op":"read","process":1}`, "line 1: invocation without a positive id"},
		{"process with two open ops", lines(
			`{"t":1,"type":"invoke","op":"acquire","id":1,"process":3}`,
			`{"t":2,"type":"invoke","op":"read","id":2,"process":3}`), "line 2: process 3 invokes read while operation 1 is still open"},
		{"release ok without deleted", lines(
			`{"t":1,"type":"invoke","op":"release","id":1,"process":1,"lease":"a"}`,
			`{"t":2,"type":"ok","op":"release","id":1,"process":1,"lease":"a"}`), `line 2: ok release without "deleted"`},
		{"negative ttl", `{"t":1,"type":"invoke","op":"acquire","id":1,"ttl_ms":-1}`, "line 1: negative ttl_ms"},
		{"header not on line 1", lines(
			`{"t":1,"type":"info","op":"crash","process":1}`,
			header), "line 2: run header is only allowed on the first line"},
		{"header with negative ttl", `{"t":0,"type":"info","op":"run","run":{"ttl_ms":-3}}`, "line 1: run header has a negative ttl"},
		{"over-long line", `{"t":1,"type":"info","op":"crash","error":"` + strings.Repeat("x", MaxLine) + `"}`, "line 1: longer than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := Decode(strings.NewReader(tc.input))
			if err == nil {
				t.Fatalf("Decode accepted malformed input, got %d events", len(h.Events))
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans several lines: %q", err)
			}
		})
	}
}

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func TestDecodeAcceptsOddButValid(t *testing.T) {
	cases := []struct {
		name, input string
		events      int
	}{
		{"empty file", "", 0},
		{"blank lines", "\n  \n\n", 0},
		{"unknown fields are ignored", `{"t":1,"type":"info","op":"crash","process":1,"future":true}`, 1},
		{"an operation still open at the end", `{"t":1,"type":"invoke","op":"acquire","id":1,"process":1}`, 1},
		{"crlf line ends", "{\"t\":1,\"type\":\"info\",\"op\":\"crash\"}\r\n{\"t\":2,\"type\":\"info\",\"op\":\"crash\"}\r\n", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := Decode(strings.NewReader(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Events) != tc.events {
				t.Fatalf("got %d events, want %d", len(h.Events), tc.events)
			}
		})
	}
}

// A history written by the Recorder must read back as exactly what was
// recorded: the checkers of a finished run and of a re-check from disk see
// the same thing.
func TestRecorderRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	run := &RunInfo{
		ID: "run-1", Lock: "token", Workload: "mutex", Topology: "single", Clients: 2, Keys: 1,
		TTLMillis: 100, Seed: 42, Started: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC),
		Params: map[string]string{"wait": "50ms"},
	}
	r := NewRecorder(&buf, run, time.Millisecond)
	inv := r.Invoke(Event{Op: Acquire, Process: 1, Client: 1, Key: "lock:0", TTLMillis: 100})
	r.Complete(inv, OK, Event{Lease: "c1-p1-1", TTLMillis: 100, Fence: 7})
	inv = r.Invoke(Event{Op: Read, Process: 1, Client: 1, Key: "lock:0"})
	r.Complete(inv, OK, Event{Value: Int64(0)})
	inv = r.Invoke(Event{Op: Write, Process: 1, Client: 1, Key: "lock:0", Value: Int64(1)})
	r.Complete(inv, OK, Event{Value: Int64(1), Seq: 1})
	ref := r.Invoke(Event{Op: Refresh, Process: 9, Client: 1, Key: "lock:0", Lease: "c1-p1-1", TTLMillis: 100})
	r.Info(Event{Op: FaultStart, Fault: "latency", Target: "redis-0"})
	r.Complete(ref, OK, Event{})
	r.Info(Event{Op: FaultHeal, Fault: "latency", Target: "redis-0"})
	inv = r.Invoke(Event{Op: Acquire, Process: 2, Client: 2, Key: "lock:0", TTLMillis: 100})
	r.Complete(inv, Unknown, Event{Error: "i/o timeout", Lease: "c2-p2-1", TTLMillis: 100})
	inv = r.Invoke(Event{Op: Release, Process: 1, Client: 1, Key: "lock:0", Lease: "c1-p1-1"})
	r.Complete(inv, OK, Event{Deleted: Bool(true)})
	r.Info(Event{Op: Crash, Process: 3, Client: 2})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	recorded := r.Events()

	h, err := Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h.Run, run) {
		t.Errorf("header: got %+v, want %+v", h.Run, run)
	}
	if !reflect.DeepEqual(h.Events, recorded[1:]) {
		a, _ := json.Marshal(h.Events)
		b, _ := json.Marshal(recorded[1:])
		t.Errorf("events differ:\n got %s\nwant %s", a, b)
	}
	ops := h.Operations()
	if len(ops) != 6 {
		t.Fatalf("got %d operations, want 6", len(ops))
	}
	if o := ops[0]; o.Status != OK || o.Lease != "c1-p1-1" || o.TTL != 100*time.Millisecond || o.Fence != 7 {
		t.Errorf("acquire paired wrongly: %+v", o)
	}
	if o := ops[2]; o.Seq != 1 || o.Value == nil || *o.Value != 1 {
		t.Errorf("write paired wrongly: %+v", o)
	}
	if o := ops[4]; o.Status != Unknown || o.Lease != "c2-p2-1" || o.Error != "i/o timeout" {
		t.Errorf("unknown acquire paired wrongly: %+v", o)
	}
	if o := ops[5]; o.Deleted == nil || !*o.Deleted {
		t.Errorf("release paired wrongly: %+v", o)
	}
	if w := h.Faults(); len(w) != 1 || w[0].Fault != "latency" || w[0].End < w[0].Start {
		t.Errorf("faults: %+v", w)
	}
	if n := len(h.Infos()); n != 3 {
		t.Errorf("got %d info events, want 3", n)
	}
	for i := 1; i < len(h.Events); i++ {
		if h.Events[i].Time < h.Events[i-1].Time {
			t.Fatalf("event %d goes back in time", i)
		}
	}
}

func TestOperationsOpenAtEnd(t *testing.T) {
	h, err := Decode(strings.NewReader(lines(
		`{"t":1,"type":"invoke","op":"acquire","id":1,"process":1,"key":"k","ttl_ms":10}`,
		`{"t":5,"type":"info","op":"fault-start","fault":"pause","target":"c1"}`,
		`{"t":9,"type":"info","op":"crash","process":2}`)))
	if err != nil {
		t.Fatal(err)
	}
	ops := h.Operations()
	if len(ops) != 1 || ops[0].Status != Unknown || ops[0].Return != 9 {
		t.Fatalf("an operation open at the end must be unknown, returning at the end: %+v", ops)
	}
	if w := h.Faults(); len(w) != 1 || w[0].End != 9 {
		t.Fatalf("an unhealed fault lasts to the end: %+v", w)
	}
	if !ActiveAt(h.Faults(), 7, 8) || ActiveAt(h.Faults(), 1, 4) {
		t.Fatal("ActiveAt disagrees with the fault window [5, 9]")
	}
}
