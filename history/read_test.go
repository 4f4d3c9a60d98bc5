package history

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Lines of a small valid history that the malformed cases below take apart.
const (
	hdr    = `{"i":0,"t":0,"type":"info","op":"run","process":0,"client":0,"run":{"id":"r","lock":"token","clients":2,"keys":1,"ttl_ms":100,"seed":1,"started":"2024-01-01T00:00:00Z"}}`
	acqInv = `{"t":1,"type":"invoke","op":"acquire","id":1,"process":1,"client":1,"key":"k","ttl_ms":100}`
	acqOK  = `{"t":2,"type":"ok","op":"acquire","id":1,"process":1,"client":1,"key":"k","lease":"a","ttl_ms":100}`
	relInv = `{"t":3,"type":"invoke","op":"release","id":2,"process":1,"client":1,"key":"k","lease":"a"}`
	relOK  = `{"t":4,"type":"ok","op":"release","id":2,"process":1,"client":1,"key":"k","lease":"a","deleted":true}`
)

// Decode is the gate for files that may be truncated, hand-edited or not
// histories at all: each kind of damage must come back as an error naming
// the problem and its line, never as a panic or a silently accepted history.
func TestDecodeRejectsMalformed(t *testing.T) {
	cases := slices.Concat(malformedSyntaxCases(), malformedFieldCases(), malformedStructureCases())
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

// malformedCase is an input Decode must refuse, and what its error must
// say.
type malformedCase struct {
	name, input, want string
}

// malformedSyntaxCases are lines that are not JSON events, or name an
// unknown type or op, or carry a time out of range.
func malformedSyntaxCases() []malformedCase {
	return []malformedCase{
		// Not JSON events.
		{"bad json", "{\"t\":1,\"type\":\"invoke\"\n", "line 1: not a JSON event"},
		{"bad json mid-file", lines(acqInv, `{"t":2,`, acqOK), "line 2: not a JSON event"},
		{"unterminated last line that is not cut JSON", acqInv + "\n{not json", "line 2: not a JSON event"},
		{"not an object", `[1,2,3]` + "\n", "line 1: not a JSON event"},
		{"two values on a line", `{"t":1,"type":"info","op":"crash"} {"t":2}`, "line 1: more than one JSON value"},
		{"wrong field type", `{"t":"soon","type":"invoke","op":"acquire","id":1}`, "line 1: not a JSON event"},
		{"fractional time", `{"t":1.5,"type":"invoke","op":"read","id":1}`, "line 1: not a JSON event"},
		{"over-long line", `{"t":1,"type":"info","op":"crash","error":"` + strings.Repeat("x", MaxLine) + `"}`, "line 1: longer than"},
		// Names.
		{"unknown type", `{"t":1,"type":"started","op":"acquire","id":1}`, `line 1: unknown event type "started"`},
		{"missing type", `{"t":1,"op":"acquire","id":1}`, `line 1: unknown event type ""`},
		{"missing op", `{"t":1,"type":"invoke","id":1}`, "line 1: event without op"},
		{"misspelt op", lines(acqInv, strings.Replace(acqOK, `"acquire"`, `"aquire"`, 1)), `line 2: unknown op "aquire"`},
		{"misspelt op on its invocation", lines(strings.Replace(acqInv, `"acquire"`, `"Acquire"`, 1)), `line 1: unknown op "Acquire"`},
		{"info op invoked", `{"t":1,"type":"invoke","op":"crash","id":1,"process":1}`, `line 1: op "crash" cannot have type "invoke"`},
		{"lock op as info", `{"t":1,"type":"info","op":"acquire","key":"k"}`, `line 1: op "acquire" cannot have type "info"`},
		{"run op without a header", `{"t":1,"type":"info","op":"run"}`, `line 1: unknown op "run"`},
		// Times.
		{"negative time", `{"t":-5,"type":"invoke","op":"read","id":1}`, "line 1: invoke read: t -5 is out of range"},
		{"time near int64 max", lines(acqInv, strings.Replace(acqOK, `"t":2`, `"t":9223372036854775000`, 1)), "line 2: ok acquire: t 9223372036854775000 is out of range"},
		{"time just past the bound", `{"t":9007199254740993,"type":"info","op":"crash"}`, "t 9007199254740993 is out of range"},
		{"time going back", lines(acqInv, strings.Replace(acqOK, `"t":2`, `"t":0`, 1)), "line 2: time 0 goes back"},
		{"ttl overflowing a duration", lines(strings.Replace(acqInv, `"ttl_ms":100`, `"ttl_ms":9223372036854775`, 1)), "line 1: invoke acquire: ttl_ms 9223372036854775 is out of range"},
		{"ttl overflowing on completion", lines(acqInv, strings.Replace(acqOK, `"ttl_ms":100`, `"ttl_ms":9223372036854`, 1)), "line 2: ok acquire: ttl_ms 9223372036854 is out of range"},
		{"negative ttl", lines(strings.Replace(acqInv, `"ttl_ms":100`, `"ttl_ms":-1`, 1)), "line 1: invoke acquire: ttl_ms -1 is out of range"},
		{"overflowing ttl on a read", `{"t":1,"type":"invoke","op":"read","id":1,"ttl_ms":9223372036854775807}`, "ttl_ms 9223372036854775807 is out of range"},
		{"sent before the call", lines(acqInv, strings.Replace(acqOK, `"lease"`, `"sent":-1,"lease"`, 1)), "line 2: ok acquire: sent -1 is out of range [1, 2]"},
		{"sent after the completion", lines(acqInv, strings.Replace(acqOK, `"lease"`, `"sent":3,"lease"`, 1)), "line 2: ok acquire: sent 3 is out of range [1, 2]"},
		{"sent on a release", lines(acqInv, acqOK, relInv, strings.Replace(relOK, `"deleted"`, `"sent":4,"deleted"`, 1)), "sent only allowed on ok acquire completions"},
	}
}

// malformedFieldCases are events whose ids, keys, leases or results are
// out of range, missing or on the wrong event.
func malformedFieldCases() []malformedCase {
	return []malformedCase{
		// Ids.
		{"negative id", lines(strings.Replace(acqInv, `"id":1`, `"id":-1`, 1)), "line 1: invoke acquire: id -1: an operation needs a positive id"},
		{"invocation without id", `{"t":1,"type":"invoke","op":"read","process":1}`, "id 0: an operation needs a positive id"},
		{"id on an info event", `{"t":1,"type":"info","op":"crash","id":4}`, "id only allowed on operations"},
		{"negative process", lines(strings.Replace(acqInv, `"process":1`, `"process":-2`, 1)), "line 1: invoke acquire: process -2 is out of range"},
		{"process past the bound", lines(strings.Replace(acqInv, `"process":1`, `"process":4294967296`, 1)), "process 4294967296 is out of range"},
		{"negative client", lines(strings.Replace(acqInv, `"client":1`, `"client":-1`, 1)), "client -1 is out of range"},
		{"negative index", `{"i":-1,"t":1,"type":"info","op":"crash"}`, "i -1 is out of range"},
		// Keys, leases and results.
		{"empty key on an acquire", lines(strings.Replace(acqInv, `"key":"k"`, `"key":""`, 1)), "line 1: invoke acquire: key empty on a lock operation"},
		{"no key on a release", lines(acqInv, acqOK, strings.Replace(relInv, `"key":"k",`, "", 1)), "line 3: invoke release: key empty on a lock operation"},
		{"release without a lease", lines(acqInv, acqOK, strings.Replace(relInv, `,"lease":"a"`, "", 1)), "line 3: invoke release: lease empty on a release"},
		{"lease on a write", `{"t":1,"type":"invoke","op":"write","id":1,"lease":"a"}`, "lease only allowed on lock operations"},
		{"deleted on an acquire", lines(acqInv, strings.Replace(acqOK, `"lease"`, `"deleted":true,"lease"`, 1)), "line 2: ok acquire: deleted only allowed on release completions"},
		{"deleted on a release invocation", lines(acqInv, acqOK, strings.Replace(relInv, `"lease"`, `"deleted":false,"lease"`, 1)), "line 3: invoke release: deleted only allowed"},
		{"release ok without deleted", lines(acqInv, acqOK, relInv, strings.Replace(relOK, `,"deleted":true`, "", 1)), `line 4: ok release: deleted missing on an ok release`},
		{"attempts on a release", lines(acqInv, acqOK, relInv, strings.Replace(relOK, `"deleted"`, `"attempts":2,"deleted"`, 1)), "attempts only allowed on acquire completions"},
		{"negative attempts", lines(acqInv, strings.Replace(acqOK, `"lease"`, `"attempts":-1,"lease"`, 1)), "attempts -1 is out of range"},
		{"negative fence", lines(acqInv, strings.Replace(acqOK, `"lease"`, `"fence":-7,"lease"`, 1)), "fence -7 is out of range"},
		{"negative seq", `{"t":1,"type":"invoke","op":"write","id":1,"seq":-1}`, "seq -1 is out of range"},
		{"fault without a name", `{"t":1,"type":"info","op":"fault-start","target":"x"}`, "line 1: info fault-start: fault empty on a fault-start"},
		{"fault on a crash", `{"t":1,"type":"info","op":"crash","fault":"x"}`, "fault only allowed on fault-start and fault-heal"},
	}
}

// malformedStructureCases are histories whose events do not pair up, whose
// header is wrong, or which hold no operation at all.
func malformedStructureCases() []malformedCase {
	return []malformedCase{
		// Pairing.
		{"completion without invocation", `{"t":1,"type":"ok","op":"acquire","id":7,"process":1,"key":"k"}`, "operation 7, which is not open"},
		{"completion before its invocation", lines(acqOK, acqInv), "line 1: ok completion of operation 1, which is not open"},
		{"completion twice", lines(acqInv, acqOK, acqOK), "line 3: ok completion of operation 1, which is not open"},
		{"completion by another process", lines(acqInv, strings.Replace(acqOK, `"process":1`, `"process":2`, 1)), "line 2: completion of operation 1 does not match its invocation on line 1"},
		{"completion by another client", lines(acqInv, strings.Replace(acqOK, `"client":1`, `"client":2`, 1)), "does not match its invocation"},
		{"completion of another op", lines(acqInv, strings.Replace(acqOK, `"acquire"`, `"refresh"`, 1)), "does not match its invocation"},
		{"completion on another key", lines(acqInv, strings.Replace(acqOK, `"key":"k"`, `"key":"j"`, 1)), "does not match its invocation"},
		{"id reused", lines(acqInv, acqOK, strings.Replace(relInv, `"id":2`, `"id":1`, 1)), "line 3: operation id 1 used twice"},
		{"process with two open ops", lines(acqInv, relInv), "line 2: process 1 invokes release while operation 1 is still open"},
		// The header.
		{"header not on line 1", lines(`{"t":1,"type":"info","op":"crash","process":1}`, hdr), "line 2: run header is only allowed on the first line"},
		{"header with negative ttl", `{"t":0,"type":"info","op":"run","run":{"ttl_ms":-3,"clients":1,"keys":1}}`, "line 1: run header: ttl_ms -3 is out of range"},
		{"header with overflowing ttl", `{"t":0,"type":"info","op":"run","run":{"ttl_ms":9223372036854775807,"clients":1,"keys":1}}`, "run header: ttl_ms 9223372036854775807 is out of range"},
		{"header without clients", `{"t":0,"type":"info","op":"run","run":{"ttl_ms":100,"clients":0,"keys":1}}`, "run header: clients 0 is out of range"},
		{"header with negative keys", `{"t":0,"type":"info","op":"run","run":{"ttl_ms":100,"clients":1,"keys":-1}}`, "run header: keys -1 is out of range"},
		{"header on an operation", `{"t":0,"type":"invoke","op":"acquire","id":1,"key":"k","run":{"ttl_ms":100,"clients":1,"keys":1}}`, "run header must be an info event"},
		// No evidence.
		{"empty file", "", "no operations: the history is empty"},
		{"blank lines", "\n  \n\n", "no operations: the history is empty"},
		{"header only", hdr + "\n", "no operations: the history has a run header and nothing else"},
		{"faults only", lines(hdr, `{"t":1,"type":"info","op":"fault-start","fault":"f"}`, `{"t":2,"type":"info","op":"fault-heal","fault":"f"}`), "no operations: 3 events, none of them an operation"},
		{"a torn line only", hdr + "\n" + acqInv[:20], "no operations"},
	}
}

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func TestDecodeAcceptsOddButValid(t *testing.T) {
	crash := `{"t":5,"type":"info","op":"crash","process":1,"client":1}`
	cases := []struct {
		name, input string
		opts        []Option
		events      int
	}{
		{"blank lines between events", "\n" + lines(acqInv, "  ", acqOK) + "\n", nil, 2},
		{"unknown fields are ignored", lines(strings.Replace(acqInv, `"t"`, `"future":true,"t"`, 1)), nil, 1},
		{"an operation still open at the end", lines(hdr, acqInv, crash), nil, 2},
		{"crlf line ends", acqInv + "\r\n" + acqOK + "\r\n", nil, 2},
		{"no newline after a complete last line", lines(acqInv) + acqOK, nil, 2},
		{"the largest time and ttl", lines(
			strings.Replace(acqInv, `"ttl_ms":100`, `"ttl_ms":9007199254`, 1),
			`{"t":9007199254740992,"type":"info","op":"crash","process":1}`), nil, 2},
		{"sent and attempts within the call", lines(acqInv, strings.Replace(acqOK, `"lease"`, `"sent":2,"attempts":3,"lease"`, 1)), nil, 2},
		{"an op declared by its workload", lines(
			`{"t":1,"type":"invoke","op":"transfer","id":1,"process":1,"key":"acct","value":5}`,
			`{"t":2,"type":"ok","op":"transfer","id":1,"process":1,"key":"acct","value":5,"seq":1}`),
			[]Option{WithOps("transfer", "audit")}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := Decode(strings.NewReader(tc.input), tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Events) != tc.events {
				t.Fatalf("got %d events, want %d", len(h.Events), tc.events)
			}
			if h.Dropped != 0 || h.DroppedLine != 0 {
				t.Fatalf("dropped %d bytes of line %d from a clean file", h.Dropped, h.DroppedLine)
			}
		})
	}
	// Without its declaration the workload's op is unknown.
	if _, err := Decode(strings.NewReader(`{"t":1,"type":"invoke","op":"transfer","id":1}`)); err == nil ||
		!strings.Contains(err.Error(), `unknown op "transfer"`) {
		t.Fatalf("undeclared op: %v", err)
	}
}

// A harness killed mid-write leaves a last line cut inside its JSON object
// and without a newline: that, and only that, is left out and reported.
func TestDecodeTornLastLine(t *testing.T) {
	good := lines(hdr, acqInv, acqOK, relInv)
	cases := []struct {
		name, torn string
	}{
		{"cut inside a string", relOK[:30]},
		{"cut after a comma", relOK[:strings.Index(relOK, ",")+1]},
		{"cut inside a number", `{"t":12`},
		{"cut inside a literal", strings.TrimSuffix(relOK, "true}") + "tr"},
		{"cut before the closing brace", strings.TrimSuffix(relOK, "}")},
		{"cut inside a multi-byte character", `{"t":4,"error":"caf` + "\xc3"},
		{"carriage return kept", strings.TrimSuffix(relOK, "}") + "\r"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := Decode(strings.NewReader(good + tc.torn))
			if err != nil {
				t.Fatal(err)
			}
			if h.Dropped != len(tc.torn) || h.DroppedLine != 5 {
				t.Fatalf("dropped %d bytes of line %d, want %d of line 5", h.Dropped, h.DroppedLine, len(tc.torn))
			}
			if len(h.Events) != 3 {
				t.Fatalf("got %d events, want the 3 before the torn line", len(h.Events))
			}
			if ops := h.Operations(); ops[1].Status != Unknown {
				t.Fatalf("the release whose completion was torn off must be open (unknown): %+v", ops[1])
			}
		})
	}
	// The same cut line followed by a newline, or by more lines, is damage.
	for _, input := range []string{good + relOK[:30] + "\n", good + relOK[:30] + "\n" + relOK} {
		if _, err := Decode(strings.NewReader(input)); err == nil || !strings.Contains(err.Error(), "line 5: not a JSON event") {
			t.Errorf("a cut line that is not the last: %v", err)
		}
	}
}

// FromEvents applies the same rules to a recorder's events, but leaves a
// history without operations to its caller.
func TestFromEvents(t *testing.T) {
	run := &RunInfo{ID: "r", Lock: "token", Clients: 1, Keys: 1, TTLMillis: 100}
	header := Event{Type: Info, Op: RunOp, Run: run}
	cases := []struct {
		name   string
		events []Event
		want   string
	}{
		{"header only", []Event{header}, ""},
		{"nothing", nil, ""},
		{"a lock op", []Event{header, {Time: 1, Type: Invoke, Op: Acquire, ID: 1, Key: "k", TTLMillis: 100}}, ""},
		{"misspelt op", []Event{header, {Time: 1, Type: Invoke, Op: "acquir", ID: 1, Key: "k"}}, `line 2: unknown op "acquir"`},
		{"empty key", []Event{header, {Time: 1, Type: Invoke, Op: Acquire, ID: 1}}, "line 2: invoke acquire: key empty"},
		{"overflowing ttl", []Event{header, {Time: 1, Type: Invoke, Op: Refresh, ID: 1, Key: "k", Lease: "a", TTLMillis: 1 << 62}}, "ttl_ms 4611686018427387904 is out of range"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := FromEvents(tc.events)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v does not mention %q", err, tc.want)
			case tc.want == "" && len(h.Events) != max(0, len(tc.events)-1):
				t.Fatalf("got %d events from %d, the header apart", len(h.Events), len(tc.events))
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
