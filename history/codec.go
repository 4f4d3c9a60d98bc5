package history

import (
	"encoding/json"
	"strconv"
)

// A long run writes millions of events and a check reads them back, and
// encoding/json spends most of both on reflection. The recorder therefore
// appends each event's line by hand, and the reader parses the lines the
// recorder writes by hand; both give exactly what encoding/json gives
// (codec_test.go holds them to that), and both hand anything unusual (the
// run header, a string needing escapes, a key spelt otherwise, a number
// that is not a plain integer) to encoding/json, so that what a strict
// reading accepts or refuses does not change.

// appendEvent appends e's JSON line, as json.Encoder writes it (HTML-safe,
// with a newline), to b.
func appendEvent(b []byte, e *Event) []byte {
	if e.Run != nil || !plain(string(e.Type)) || !plain(string(e.Op)) || !plain(e.Key) || !plain(e.Lease) ||
		!plain(e.Fault) || !plain(e.Target) || !plain(e.Error) {
		type raw Event
		out, err := json.Marshal(raw(*e))
		if err != nil {
			out, _ = json.Marshal(Event{Index: e.Index, Time: e.Time, Type: Info, Op: "unencodable", Error: err.Error()})
		}
		return append(append(b, out...), '\n')
	}
	b = append(b, `{"i":`...)
	b = strconv.AppendInt(b, e.Index, 10)
	b = append(b, `,"t":`...)
	b = strconv.AppendInt(b, e.Time, 10)
	b = appendStr(append(b, `,"type":`...), string(e.Type))
	b = appendStr(append(b, `,"op":`...), string(e.Op))
	b = appendInt(b, `,"id":`, e.ID)
	b = strconv.AppendInt(append(b, `,"process":`...), int64(e.Process), 10)
	b = strconv.AppendInt(append(b, `,"client":`...), int64(e.Client), 10)
	if e.Key != "" {
		b = appendStr(append(b, `,"key":`...), e.Key)
	}
	if e.Lease != "" {
		b = appendStr(append(b, `,"lease":`...), e.Lease)
	}
	b = appendInt(b, `,"ttl_ms":`, e.TTLMillis)
	b = appendInt(b, `,"fence":`, e.Fence)
	if e.Value != nil {
		b = strconv.AppendInt(append(b, `,"value":`...), *e.Value, 10)
	}
	b = appendInt(b, `,"seq":`, e.Seq)
	if e.Deleted != nil {
		b = strconv.AppendBool(append(b, `,"deleted":`...), *e.Deleted)
	}
	b = appendInt(b, `,"attempts":`, int64(e.Attempts))
	b = appendInt(b, `,"sent":`, e.Sent)
	if len(e.Tries) > 0 {
		b = append(b, `,"tries":[`...)
		for i, t := range e.Tries {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = strconv.AppendInt(b, t[0], 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, t[1], 10)
			b = append(b, ']')
		}
		b = append(b, ']')
	}
	b = appendInt(b, `,"held_from":`, e.HeldFrom)
	b = appendInt(b, `,"held_to":`, e.HeldTo)
	b = appendInt(b, `,"from":`, e.From)
	if e.Fault != "" {
		b = appendStr(append(b, `,"fault":`...), e.Fault)
	}
	if e.Target != "" {
		b = appendStr(append(b, `,"target":`...), e.Target)
	}
	if e.Error != "" {
		b = appendStr(append(b, `,"error":`...), e.Error)
	}
	return append(b, "}\n"...)
}

func appendInt(b []byte, name string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, name...), v, 10)
}

func appendStr(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plain reports whether s can be written between quotes as it is: printable
// ASCII that encoding/json would not escape.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// parseEvent parses a line the way json.Unmarshal would, or reports false
// for any line outside the plain shape the recorder writes (the caller then
// asks encoding/json, which decides).
func parseEvent(b []byte) (Event, bool) {
	var e Event
	p := lineParser{b: b}
	if !p.byte('{') {
		return e, false
	}
	if p.peek('}') {
		p.i++
		return e, p.i == len(b)
	}
	for {
		name, ok := p.str()
		if !ok || !p.byte(':') {
			return e, false
		}
		if !p.field(&e, name) {
			return e, false
		}
		if p.peek(',') {
			p.i++
			continue
		}
		if p.byte('}') && p.i == len(b) {
			return e, true
		}
		return e, false
	}
}

type lineParser struct {
	b []byte
	i int
}

func (p *lineParser) peek(c byte) bool { return p.i < len(p.b) && p.b[p.i] == c }

func (p *lineParser) byte(c byte) bool {
	if p.peek(c) {
		p.i++
		return true
	}
	return false
}

// str reads a string of plain characters (see plain) without copying.
func (p *lineParser) str() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	for ; p.i < len(p.b); p.i++ {
		c := p.b[p.i]
		if c == '"' {
			s := p.b[start:p.i]
			p.i++
			return s, true
		}
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return nil, false
		}
	}
	return nil, false
}

// int reads a JSON integer that fits an int64: an optional minus, then 0
// or digits without a leading zero.
func (p *lineParser) int() (int64, bool) {
	start := p.i
	if p.peek('-') {
		p.i++
	}
	d := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	if p.i == d || (p.b[d] == '0' && p.i-d > 1) {
		return 0, false
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return 0, false
	}
	v, err := strconv.ParseInt(string(p.b[start:p.i]), 10, 64)
	return v, err == nil
}

func (p *lineParser) intField(dst *int64) bool {
	v, ok := p.int()
	*dst = v
	return ok
}

func (p *lineParser) smallInt(dst *int) bool {
	v, ok := p.int()
	if !ok || int64(int(v)) != v {
		return false
	}
	*dst = int(v)
	return true
}

// interned returns a string for s, sharing the constant for the names a
// history is made of, so that millions of events do not each hold a copy.
func interned(s []byte) string {
	if n, ok := internedNames[string(s)]; ok {
		return n
	}
	return string(s)
}

// internedNames are the event types and the lock operations, each its own
// key and value.
var internedNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{string(Invoke), string(OK), string(Fail), string(Unknown), string(Info),
		string(Acquire), string(Release), string(Refresh), string(Read), string(Write)} {
		m[n] = n
	}
	return m
}()

// field reads the value of the named field into e. Only the exact names the
// recorder writes are known here; json.Unmarshal also matches other
// spellings, so anything else goes back to it.
func (p *lineParser) field(e *Event, name []byte) bool {
	switch string(name) {
	case "i":
		return p.intField(&e.Index)
	case "t":
		return p.intField(&e.Time)
	case "type", "op", "key", "lease", "fault", "target", "error":
		s, ok := p.str()
		if !ok {
			return false
		}
		switch string(name) {
		case "type":
			e.Type = Type(interned(s))
		case "op":
			e.Op = Op(interned(s))
		case "key":
			e.Key = string(s)
		case "lease":
			e.Lease = string(s)
		case "fault":
			e.Fault = string(s)
		case "target":
			e.Target = string(s)
		case "error":
			e.Error = string(s)
		}
		return true
	case "id":
		return p.intField(&e.ID)
	case "process":
		return p.smallInt(&e.Process)
	case "client":
		return p.smallInt(&e.Client)
	case "ttl_ms":
		return p.intField(&e.TTLMillis)
	case "fence":
		return p.intField(&e.Fence)
	case "value":
		v, ok := p.int()
		e.Value = &v
		return ok
	case "seq":
		return p.intField(&e.Seq)
	case "deleted":
		var v bool
		switch {
		case len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "true":
			v, p.i = true, p.i+4
		case len(p.b)-p.i >= 5 && string(p.b[p.i:p.i+5]) == "false":
			p.i += 5
		default:
			return false
		}
		e.Deleted = &v
		return true
	case "attempts":
		return p.smallInt(&e.Attempts)
	case "sent":
		return p.intField(&e.Sent)
	case "held_from":
		return p.intField(&e.HeldFrom)
	case "held_to":
		return p.intField(&e.HeldTo)
	case "from":
		return p.intField(&e.From)
	case "tries":
		return p.tries(e)
	}
	return false
}

func (p *lineParser) tries(e *Event) bool {
	if !p.byte('[') {
		return false
	}
	e.Tries = [][2]int64{}
	if p.byte(']') {
		return true
	}
	for {
		var t [2]int64
		if !p.byte('[') || !p.intField(&t[0]) || !p.byte(',') || !p.intField(&t[1]) || !p.byte(']') {
			return false
		}
		e.Tries = append(e.Tries, t)
		if p.byte(',') {
			continue
		}
		return p.byte(']')
	}
}
