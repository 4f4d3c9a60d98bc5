package history

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"reflect"
	"testing"
	"time"
)

// randomEvent draws an event with every field sometimes set, sometimes to
// values that need escaping or sit at the edges of int64.
func randomEvent(r *rand.Rand) Event {
	strs := []string{"", "lock:0", "c3-p4-1", "a<b>&c", "quo\"te", "back\\slash", "tab\there", "ünï", "line\nbreak"}
	ints := []int64{0, 1, -1, 42, math.MaxInt64, math.MinInt64, 1 << 53}
	pick := func() int64 { return ints[r.Intn(len(ints))] }
	str := func() string { return strs[r.Intn(len(strs))] }
	e := Event{Index: pick(), Time: pick(), Type: Type(str()), Op: Op(str()), ID: pick(), Process: int(pick()), Client: int(pick()),
		Key: str(), Lease: str(), TTLMillis: pick(), Fence: pick(), Seq: pick(), Attempts: int(pick()), Sent: pick(),
		HeldFrom: pick(), HeldTo: pick(), Fault: str(), Target: str(), Error: str()}
	if r.Intn(2) == 0 {
		e.Value = Int64(pick())
	}
	if r.Intn(2) == 0 {
		e.Deleted = Bool(r.Intn(2) == 0)
	}
	switch r.Intn(3) {
	case 1:
		e.Tries = [][2]int64{}
	case 2:
		for range 1 + r.Intn(3) {
			e.Tries = append(e.Tries, [2]int64{pick(), pick()})
		}
	}
	if r.Intn(20) == 0 {
		e.Run = &RunInfo{ID: "r", Lock: "token", Clients: 1, Keys: 1, Started: time.Unix(0, 0).UTC()}
	}
	if r.Intn(3) > 0 { // most events look like the recorder's
		e.Type, e.Op, e.Key, e.Lease, e.Fault, e.Target, e.Error = Invoke, Acquire, "lock:1", "tok", "", "", ""
	}
	return e
}

// The hand-written writer and reader must agree byte for byte with
// encoding/json, which the rest of the format's rules are stated in.
func TestCodecMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	plainLines := 0
	for i := 0; i < 20000; i++ {
		e := randomEvent(r)
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(e); err != nil {
			t.Fatal(err)
		}
		got := appendEvent(nil, &e)
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("event %+v:\n got %s\nwant %s", e, got, want.Bytes())
		}
		line := bytes.TrimSpace(got)
		var std Event
		if err := json.Unmarshal(line, &std); err != nil {
			t.Fatal(err)
		}
		if fast, ok := parseEvent(line); ok {
			plainLines++
			if !reflect.DeepEqual(fast, std) {
				t.Fatalf("line %s:\nparsed %+v\n  want %+v", line, fast, std)
			}
		}
	}
	if plainLines < 10000 {
		t.Fatalf("only %d of 20000 lines took the fast path", plainLines)
	}
}

// Lines json.Unmarshal reads differently from the recorder's shape must be
// left to it: the fast path either agrees or declines.
func TestParseEventDeclinesOddLines(t *testing.T) {
	for _, line := range []string{
		`{"t":1.5}`, `{"t":1e3}`, `{"t":01}`, `{"T":1}`, `{"t": 1}`, `{"t":1} `, `{"t":1}{}`, `{"t":null}`,
		`{"key":"a\"b"}`, `{"tries":[[1,2,3]]}`, `{"tries":[[1]]}`, `{"deleted":1}`, `{"t":99999999999999999999}`,
		`{"process":1,}`, `{,}`, `{"run":{}}`, `{"value":-}`, `{"unknown":1}`,
	} {
		var std Event
		stdErr := json.Unmarshal([]byte(line), &std)
		fast, ok := parseEvent([]byte(line))
		if ok && (stdErr != nil || !reflect.DeepEqual(fast, std)) {
			t.Errorf("%s: fast path accepted %+v; encoding/json: %+v, %v", line, fast, std, stdErr)
		}
	}
}
