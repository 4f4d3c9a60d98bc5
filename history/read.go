package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLine bounds one line of a history file; longer lines are malformed.
const MaxLine = 1 << 20

// History is a validated run record.
type History struct {
	Run    *RunInfo // nil when the file had no header
	Events []Event
	// Dropped is the size in bytes of a torn last line that was left out
	// (what a harness killed mid-write leaves: a line without its newline
	// that stops inside its JSON object), and DroppedLine its number; both
	// 0 when the file ended cleanly. A checker's verdict covers the rest.
	Dropped     int
	DroppedLine int
}

// Load reads and validates a history.jsonl file (see Decode).
func Load(path string, opts ...Option) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	h, err := Decode(f, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// Decode parses and validates a history, which is untrusted input: one JSON
// object a line; a known type and op on each; every field in range and
// where it means something (see fieldRules and the Max bounds); times that
// never go back; every completion matching an open invocation of the same
// process; at most one open operation a process; at least one operation
// (else ErrNoOperations). The one defect it tolerates is a torn last line,
// which it leaves out and reports in History.Dropped. Errors name the line.
func Decode(r io.Reader, opts ...Option) (*History, error) {
	rd := NewReader(r, opts...)
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if e.Run == nil {
			rd.v.h.Events = append(rd.v.h.Events, e)
		}
	}
	return rd.v.h, nil
}

// lineSplitter is bufio.ScanLines that also says whether the line it
// returned last ran to the end of the input without a newline: only such a
// line can be one a killed writer left half done.
type lineSplitter struct{ unterminated bool }

func (s *lineSplitter) split(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		s.unterminated = true
		return len(data), data, nil
	}
	return 0, nil, nil
}

// FromEvents validates events already in memory (as a recorder holds them)
// by the same rules as Decode, with line numbers counted from the first
// event. Unlike Decode it accepts a history without operations: a run that
// recorded none is the runner's to judge, not a malformed record.
func FromEvents(events []Event, opts ...Option) (*History, error) {
	v := newValidator(opts)
	for i, e := range events {
		if err := v.add(e, i+1); err != nil {
			return nil, err
		}
	}
	v.h.Events = events
	if v.h.Run != nil {
		v.h.Events = events[1:]
	}
	return v.finish(false)
}

// End is the time of the last event.
func (h *History) End() int64 {
	if len(h.Events) == 0 {
		return 0
	}
	return h.Events[len(h.Events)-1].Time
}
