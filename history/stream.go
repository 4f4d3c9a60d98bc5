package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
)

// Reader reads a history one event at a time and validates each line as it
// goes, by the rules Decode applies to a whole file, so that a history far
// larger than memory can be checked: it holds the operations still open and
// a compact set of the operation ids used so far, never the events.
type Reader struct {
	sc    *bufio.Scanner
	split lineSplitter
	v     *validator
	line  int
	done  bool
}

// NewReader returns a Reader of r; opts are those of Decode.
func NewReader(r io.Reader, opts ...Option) *Reader {
	rd := &Reader{v: newValidator(opts)}
	rd.sc = bufio.NewScanner(r)
	rd.sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	rd.sc.Split(rd.split.split)
	return rd
}

// Next returns the next event, the run header included (the event whose Run
// is set). At the end it returns io.EOF, or an error wrapping
// ErrNoOperations if the history held no operation; a malformed line is an
// error naming it. A torn last line is left out (see Dropped).
func (r *Reader) Next() (Event, error) {
	if r.done {
		return Event{}, io.EOF
	}
	for r.sc.Scan() {
		r.line++
		raw := r.sc.Bytes()
		b := bytes.TrimSpace(raw)
		if len(b) == 0 {
			continue
		}
		e, err := decodeLine(b)
		if err != nil {
			if r.split.unterminated && errors.Is(err, io.ErrUnexpectedEOF) {
				r.v.h.Dropped, r.v.h.DroppedLine = len(raw), r.line
				break
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = fmt.Errorf("not a JSON event: %v", err)
			}
			return Event{}, fmt.Errorf("line %d: %w", r.line, err)
		}
		if err := r.v.add(e, r.line); err != nil {
			return Event{}, err
		}
		return e, nil
	}
	r.done = true
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Event{}, fmt.Errorf("line %d: longer than %d bytes", r.line+1, MaxLine)
		}
		return Event{}, fmt.Errorf("read history: %w", err)
	}
	if _, err := r.v.finish(true); err != nil {
		return Event{}, err
	}
	return Event{}, io.EOF
}

// Run is the history's header, once Next has returned it (nil if none).
func (r *Reader) Run() *RunInfo { return r.v.h.Run }

// Dropped reports the size and line number of a torn last line that was
// left out; both 0 when the file ended cleanly (or was not read to its end).
func (r *Reader) Dropped() (bytes, line int) { return r.v.h.Dropped, r.v.h.DroppedLine }

// decodeLine parses one line: the recorder's lines by hand (codec.go), any
// other by json.Unmarshal; only a line
// it refuses goes through a Decoder again, to tell a cut line
// (io.ErrUnexpectedEOF) and a line of two values apart in the message.
func decodeLine(b []byte) (Event, error) {
	if e, ok := parseEvent(b); ok {
		return e, nil
	}
	var e Event
	if err := json.Unmarshal(b, &e); err == nil {
		return e, nil
	}
	e = Event{}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&e); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return e, err
		}
		return e, fmt.Errorf("not a JSON event: %v", err)
	}
	if dec.More() {
		return e, errors.New("more than one JSON value")
	}
	return e, errors.New("not a JSON event")
}

// Validator checks events one at a time by the rules of Decode, for a
// writer or a checker that sees a history as it is made rather than from a
// file. Line numbers in its errors count the events given to it.
type Validator struct {
	v *validator
}

// NewValidator returns a Validator; opts are those of Decode.
func NewValidator(opts ...Option) *Validator { return &Validator{newValidator(opts)} }

// Add validates e against every event before it.
func (v *Validator) Add(e Event) error { return v.v.add(e, v.v.events+1) }

// Operations reports how many operations have been invoked so far.
func (v *Validator) Operations() int { return v.v.ops }

// idSet is the set of operation ids a history has used, as sorted disjoint
// runs [from, to]: a recorder numbers operations 1, 2, 3..., so a history
// of any length takes one run, where a map would grow with every operation.
type idSet struct{ runs [][2]int64 }

// add inserts id and reports whether it was new.
func (s *idSet) add(id int64) bool {
	n := len(s.runs)
	if n > 0 && s.runs[n-1][1] < id {
		if s.runs[n-1][1]+1 == id {
			s.runs[n-1][1] = id
		} else {
			s.runs = append(s.runs, [2]int64{id, id})
		}
		return true
	}
	i := sort.Search(n, func(i int) bool { return s.runs[i][1] >= id })
	if i < n && s.runs[i][0] <= id {
		return false
	}
	// id lies before run i (or i == n and the set is empty).
	switch {
	case i < n && s.runs[i][0] == id+1 && i > 0 && s.runs[i-1][1] == id-1:
		s.runs[i-1][1] = s.runs[i][1]
		s.runs = append(s.runs[:i], s.runs[i+1:]...)
	case i < n && s.runs[i][0] == id+1:
		s.runs[i][0] = id
	case i > 0 && s.runs[i-1][1] == id-1:
		s.runs[i-1][1] = id
	default:
		s.runs = append(s.runs, [2]int64{})
		copy(s.runs[i+1:], s.runs[i:])
		s.runs[i] = [2]int64{id, id}
	}
	return true
}
