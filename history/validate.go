package history

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Bounds of a valid history. A history file is untrusted input and the
// checkers do arithmetic on what it says (a call plus a few TTLs, a lease
// start minus a drift), so every number is bounded well inside int64: with
// times and TTLs at most 1<<53 ns, any time plus 500 TTLs still fits.
const (
	// MaxTime is the latest event time: 1<<53 ns, about 104 days after the
	// run's base time, and exact in a float64 (what JavaScript reports read).
	MaxTime int64 = 1 << 53
	// MaxTTLMillis is the longest lease a history may name, the same span
	// as MaxTime in milliseconds.
	MaxTTLMillis = MaxTime / int64(time.Millisecond)
	// MaxClients bounds client ids, and the clients and keys of a run header.
	MaxClients = 1 << 20
	// MaxProcess bounds process ids: a client takes a new one after each
	// unknown outcome, so they grow with the length of a run.
	MaxProcess = math.MaxInt32
	// MaxAttempts bounds the tries one acquire reports.
	MaxAttempts = math.MaxInt32
)

// RunOp is the op of the header line, the one that carries the RunInfo.
const RunOp Op = "run"

// ErrNoOperations is returned for a history that records no operation: an
// empty file, a header alone, or faults with nothing under them. It is no
// evidence, and a check of it must not pass as valid.
var ErrNoOperations = errors.New("no operations")

// Option adjusts how a history is read.
type Option func(*readConfig)

type readConfig struct {
	extra map[Op]bool
}

// WithOps declares operation names beyond the built-in ones, for a workload
// outside this module that records operations of its own on its guarded
// resource. They are checked as resource operations: invoked and completed,
// no lease fields.
func WithOps(ops ...Op) Option {
	return func(c *readConfig) {
		if c.extra == nil {
			c.extra = map[Op]bool{}
		}
		for _, o := range ops {
			c.extra[o] = true
		}
	}
}

// opClass says what an op name may be used for.
type opClass int

const (
	unknownOp  opClass = iota
	lockOp             // invoked and completed; key, lease and ttl fields
	resourceOp         // invoked and completed on the guarded resource
	infoOp             // an instant: Info events only
)

// classOf returns what op is: a built-in name, or one declared with WithOps.
func (c *readConfig) classOf(op Op) opClass {
	if op.IsLock() {
		return lockOp
	}
	switch op {
	case Read, Write, Enqueue, Restock, Buy:
		return resourceOp
	case Crash, FaultStart, FaultStep, FaultHeal, MasterSwitch, Stall:
		return infoOp
	}
	if op != "" && op != RunOp && c.extra[op] {
		return resourceOp
	}
	return unknownOp
}

func isAcquire(op Op) bool { return op == Acquire || op == NestedAcquire }
func isRelease(op Op) bool { return op == Release || op == NestedRelease }

// fieldRule checks one field of an event. inv is the invocation an
// operation's completion closes (nil for invocations and info events); the
// event's type and op are known to be valid. It returns the problem, or ""
// when the field is fine. A new Event field gets its rule here.
type fieldRule struct {
	field string
	check func(e, inv *Event, class opClass) string
}

func inRange(v, lo, hi int64) string {
	if v < lo || v > hi {
		return fmt.Sprintf("%d is out of range [%d, %d]", v, lo, hi)
	}
	return ""
}

// only says that a field set where it means nothing is an error: a history
// whose fields are misplaced was not written by the recorder, and reading it
// anyway risks a verdict on what its author did not mean.
func only(set bool, where bool, what string) string {
	if set && !where {
		return "only allowed " + what
	}
	return ""
}

// fieldRules is the table of per-field checks, in the order they are
// reported: who and what an event is about, then what an operation carries.
func fieldRules() []fieldRule { return append(identityRules(), payloadRules()...) }

// identityRules check when an event happened, which operation, process,
// client, key and lease it belongs to.
func identityRules() []fieldRule {
	return []fieldRule{
		{"t", func(e, inv *Event, _ opClass) string { return inRange(e.Time, 0, MaxTime) }},
		{"i", func(e, inv *Event, _ opClass) string { return inRange(e.Index, 0, math.MaxInt64) }},
		{"id", func(e, inv *Event, c opClass) string {
			if c == infoOp {
				return only(e.ID != 0, false, "on operations")
			}
			if e.ID <= 0 {
				return fmt.Sprintf("%d: an operation needs a positive id", e.ID)
			}
			return ""
		}},
		{"process", func(e, inv *Event, _ opClass) string { return inRange(int64(e.Process), 0, MaxProcess) }},
		{"client", func(e, inv *Event, _ opClass) string { return inRange(int64(e.Client), 0, MaxClients-1) }},
		{"key", func(e, inv *Event, c opClass) string {
			if c == lockOp && e.Key == "" {
				return "empty on a lock operation"
			}
			return ""
		}},
		{"lease", func(e, inv *Event, c opClass) string {
			if e.Type == Invoke && (isRelease(e.Op) || e.Op == Refresh) && e.Lease == "" {
				return "empty on a " + string(e.Op) + ", which must name the lease it acts for"
			}
			// A fault-start names the lease it aimed at.
			return only(e.Lease != "", c == lockOp || e.Op == FaultStart, "on lock operations and fault-start")
		}},
	}
}

// payloadRules check what an operation carries: its TTL, fencing token,
// value, order, outcome details, and a fault's name.
func payloadRules() []fieldRule {
	return []fieldRule{
		// A ttl on another operation means nothing and is ignored, but it
		// is still a number someone may add to a time.
		{"ttl_ms", func(e, inv *Event, _ opClass) string { return inRange(e.TTLMillis, 0, MaxTTLMillis) }},
		{"fence", func(e, inv *Event, c opClass) string {
			if p := only(e.Fence != 0, c != infoOp, "on operations"); p != "" {
				return p
			}
			return inRange(e.Fence, 0, math.MaxInt64)
		}},
		{"value", func(e, inv *Event, c opClass) string {
			return only(e.Value != nil, c != infoOp, "on operations")
		}},
		{"seq", func(e, inv *Event, c opClass) string {
			if p := only(e.Seq != 0, c != infoOp, "on operations"); p != "" {
				return p
			}
			return inRange(e.Seq, 0, math.MaxInt64)
		}},
		{"deleted", func(e, inv *Event, _ opClass) string {
			if e.Op == Release && e.Type == OK && e.Deleted == nil {
				return "missing on an ok release"
			}
			return only(e.Deleted != nil, isRelease(e.Op) && e.Type.IsCompletion(), "on release completions")
		}},
		{"attempts", func(e, inv *Event, _ opClass) string {
			if p := only(e.Attempts != 0, isAcquire(e.Op) && e.Type.IsCompletion(), "on acquire completions"); p != "" {
				return p
			}
			return inRange(int64(e.Attempts), 0, MaxAttempts)
		}},
		{"sent", func(e, inv *Event, _ opClass) string {
			if e.Sent == 0 {
				return ""
			}
			if p := only(true, isAcquire(e.Op) && e.Type == OK, "on ok acquire completions"); p != "" {
				return p
			}
			return inRange(e.Sent, inv.Time, e.Time) // the winning attempt went out within the call
		}},
		{"tries/held", func(e, inv *Event, _ opClass) string {
			if inv == nil {
				return only(len(e.Tries) > 0 || e.HeldFrom != 0 || e.HeldTo != 0, false, "on completions")
			}
			if p := inRange(e.HeldTo, 0, MaxTime); p != "" {
				return p
			}
			if err := checkAttempts(inv, e); err != nil {
				return err.Error()
			}
			return ""
		}},
		{"from", func(e, inv *Event, _ opClass) string {
			if p := only(e.From != 0, e.Op == Stall, "on harness-stall"); p != "" {
				return p
			}
			return inRange(e.From, 0, e.Time)
		}},
		{"fault", func(e, inv *Event, _ opClass) string {
			fault := e.Op == FaultStart || e.Op == FaultStep || e.Op == FaultHeal
			if fault && e.Fault == "" {
				return "empty on a " + string(e.Op)
			}
			return only(e.Fault != "", fault, "on fault-start and fault-heal")
		}},
	}
}

// checkHeader validates a run header: the checkers size their windows by
// its TTL, so it must fit the clock like any ttl (0: none configured, the
// checkers fall back on the acquires' own); a run has at least one client
// and one key. Seed and names may be anything.
func checkHeader(e *Event) string {
	r := e.Run
	switch {
	case e.Type != Info || e.Op != RunOp:
		return fmt.Sprintf("run header must be an info event with op %q", RunOp)
	case inRange(r.TTLMillis, 0, MaxTTLMillis) != "":
		return "run header: ttl_ms " + inRange(r.TTLMillis, 0, MaxTTLMillis)
	case inRange(int64(r.Clients), 1, MaxClients) != "":
		return "run header: clients " + inRange(int64(r.Clients), 1, MaxClients)
	case inRange(int64(r.Keys), 1, MaxClients) != "":
		return "run header: keys " + inRange(int64(r.Keys), 1, MaxClients)
	}
	return ""
}

// validator checks a history one event at a time, so a reader can feed it
// lines as it reads them.
type validator struct {
	cfg    readConfig
	rules  []fieldRule
	h      *History
	events int // events seen, header included
	ops    int // invocations seen
	last   int64
	open   map[int64]*openOp // by operation id
	busy   map[int]int64     // process -> its open operation
	seen   idSet             // every operation id so far
	// free recycles the open operations' records, and cur and inv hold the
	// event being checked and its invocation: the rules take pointers, and
	// without these each event would cost a heap copy of an Event or two.
	free     []*openOp
	cur, inv Event
}

type openOp struct {
	ev   Event
	line int
}

func newValidator(opts []Option) *validator {
	v := &validator{rules: fieldRules(), h: &History{}, open: map[int64]*openOp{}, busy: map[int]int64{}}
	for _, o := range opts {
		o(&v.cfg)
	}
	return v
}

// add validates e, the event on the given line, against everything before
// it; the caller keeps the event.
func (v *validator) add(ev Event, line int) error {
	v.cur = ev
	e := &v.cur
	first := v.events == 0
	v.events++
	if e.Run != nil {
		if !first {
			return fmt.Errorf("line %d: run header is only allowed on the first line", line)
		}
		if p := checkHeader(e); p != "" {
			return fmt.Errorf("line %d: %s", line, p)
		}
		v.h.Run = e.Run
		return nil
	}
	if !e.Type.valid() {
		return fmt.Errorf("line %d: unknown event type %q", line, e.Type)
	}
	if e.Op == "" {
		return fmt.Errorf("line %d: event without op", line)
	}
	class := v.cfg.classOf(e.Op)
	switch {
	case class == unknownOp:
		return fmt.Errorf("line %d: unknown op %q", line, e.Op)
	case (class == infoOp) != (e.Type == Info):
		return fmt.Errorf("line %d: op %q cannot have type %q", line, e.Op, e.Type)
	}
	var inv *Event
	if e.Type.IsCompletion() {
		o, ok := v.open[e.ID]
		if !ok {
			return fmt.Errorf("line %d: %s completion of operation %d, which is not open", line, e.Type, e.ID)
		}
		if o.ev.Process != e.Process || o.ev.Op != e.Op || o.ev.Client != e.Client || o.ev.Key != e.Key {
			return fmt.Errorf("line %d: completion of operation %d does not match its invocation on line %d (process, client, op or key differs)", line, e.ID, o.line)
		}
		v.inv = o.ev
		inv = &v.inv
	}
	for _, r := range v.rules {
		if p := r.check(e, inv, class); p != "" {
			return fmt.Errorf("line %d: %s %s: %s %s", line, e.Type, e.Op, r.field, p)
		}
	}
	if e.Time < v.last {
		return fmt.Errorf("line %d: time %d goes back (previous event at %d)", line, e.Time, v.last)
	}
	if inv != nil && e.Time < inv.Time {
		return fmt.Errorf("line %d: operation %d completes at %d, before its invocation at %d", line, e.ID, e.Time, inv.Time)
	}
	v.last = e.Time
	switch {
	case e.Type == Invoke:
		if !v.seen.add(e.ID) {
			return fmt.Errorf("line %d: operation id %d used twice", line, e.ID)
		}
		if id, busy := v.busy[e.Process]; busy {
			return fmt.Errorf("line %d: process %d invokes %s while operation %d is still open", line, e.Process, e.Op, id)
		}
		var o *openOp
		if n := len(v.free); n > 0 {
			o, v.free = v.free[n-1], v.free[:n-1]
		} else {
			o = new(openOp)
		}
		o.ev, o.line = *e, line
		v.open[e.ID] = o
		v.busy[e.Process] = e.ID
		v.ops++
	case inv != nil:
		if o := v.open[e.ID]; o != nil {
			*o = openOp{}
			v.free = append(v.free, o)
		}
		delete(v.open, e.ID)
		delete(v.busy, e.Process)
	}
	return nil
}

// finish returns the history; with needOps, one without any operation is an
// ErrNoOperations.
func (v *validator) finish(needOps bool) (*History, error) {
	if needOps && v.ops == 0 {
		why := fmt.Sprintf("%d events, none of them an operation", v.events)
		switch {
		case v.events == 0:
			why = "the history is empty"
		case v.events == 1 && v.h.Run != nil:
			why = "the history has a run header and nothing else"
		}
		return nil, fmt.Errorf("%w: %s; it is no evidence either way", ErrNoOperations, why)
	}
	return v.h, nil
}
