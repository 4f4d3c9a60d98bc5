package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// MaxLine bounds one line of a history file; longer lines are malformed.
const MaxLine = 1 << 20

// History is a validated run record.
type History struct {
	Run    *RunInfo // nil when the file had no header
	Events []Event
}

// Load reads and validates a history.jsonl file.
func Load(path string) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	h, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// Decode parses and validates a history: one JSON object a line, a known type
// and op on each, times that never go back, every completion matching an open
// invocation of the same process, at most one open operation a process.
func Decode(r io.Reader) (*History, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	var events []Event
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var e Event
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("line %d: not a JSON event: %v", line, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("line %d: more than one JSON value", line)
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d bytes", len(events)+1, MaxLine)
		}
		return nil, fmt.Errorf("read history: %w", err)
	}
	return FromEvents(events)
}

// FromEvents validates events already in memory (as a recorder holds them).
// Line numbers in errors count from the first event.
func FromEvents(events []Event) (*History, error) {
	h := &History{}
	type open struct {
		ev   Event
		line int
	}
	byID := map[int64]open{}
	byProc := map[int]int64{}
	seen := map[int64]bool{}
	last := int64(math.MinInt64)
	for i := range events {
		e := &events[i]
		line := i + 1
		if e.Run != nil {
			if i != 0 {
				return nil, fmt.Errorf("line %d: run header is only allowed on the first line", line)
			}
			if e.Run.TTLMillis < 0 || e.Run.Clients < 0 || e.Run.Keys < 0 {
				return nil, fmt.Errorf("line %d: run header has a negative ttl, clients or keys", line)
			}
			h.Run = e.Run
			continue
		}
		if !e.Type.valid() {
			return nil, fmt.Errorf("line %d: unknown event type %q", line, e.Type)
		}
		if e.Op == "" {
			return nil, fmt.Errorf("line %d: event without op", line)
		}
		if e.Time < 0 {
			return nil, fmt.Errorf("line %d: negative time %d", line, e.Time)
		}
		if e.Time < last {
			return nil, fmt.Errorf("line %d: time %d goes back (previous event at %d)", line, e.Time, last)
		}
		last = e.Time
		if e.TTLMillis < 0 {
			return nil, fmt.Errorf("line %d: negative ttl_ms", line)
		}
		switch {
		case e.Type == Invoke:
			if e.ID <= 0 {
				return nil, fmt.Errorf("line %d: invocation without a positive id", line)
			}
			if seen[e.ID] {
				return nil, fmt.Errorf("line %d: operation id %d used twice", line, e.ID)
			}
			if id, busy := byProc[e.Process]; busy {
				return nil, fmt.Errorf("line %d: process %d invokes %s while operation %d is still open", line, e.Process, e.Op, id)
			}
			seen[e.ID] = true
			byID[e.ID] = open{*e, line}
			byProc[e.Process] = e.ID
		case e.Type.IsCompletion():
			o, ok := byID[e.ID]
			if !ok {
				return nil, fmt.Errorf("line %d: %s completion of operation %d, which is not open", line, e.Type, e.ID)
			}
			if o.ev.Process != e.Process || o.ev.Op != e.Op {
				return nil, fmt.Errorf("line %d: completion of operation %d does not match its invocation on line %d (process or op differs)", line, e.ID, o.line)
			}
			if e.Op == Release && e.Type == OK && e.Deleted == nil {
				return nil, fmt.Errorf("line %d: ok release without \"deleted\"", line)
			}
			delete(byID, e.ID)
			delete(byProc, e.Process)
		}
	}
	h.Events = events
	if h.Run != nil {
		h.Events = events[1:]
	}
	return h, nil
}

// End is the time of the last event.
func (h *History) End() int64 {
	if len(h.Events) == 0 {
		return 0
	}
	return h.Events[len(h.Events)-1].Time
}
