// Package history is the record of a run: every operation a client performed,
// as an invocation and a completion stamped on one monotonic clock, and every
// fault the nemesis started or healed. The recorder streams it to disk while the
// run goes on, so a harness that dies still leaves a history that can be checked;
// the reader treats such a file as untrusted input and validates it.
package history

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Type says what an event is: the invocation of an operation, one of its three
// possible completions, or an informational event (a crash, a fault, a failover).
type Type string

const (
	Invoke Type = "invoke"
	// OK: the operation happened and the client saw its result.
	OK Type = "ok"
	// Fail: the operation definitely did not take effect.
	Fail Type = "fail"
	// Unknown: timeout, reset or lost reply; it may or may not have taken effect.
	// The process that issued it never issues another operation.
	Unknown Type = "unknown"
	// Info: something that happened at one instant, not an operation: a client
	// crash, a fault starting or healing, a master switch.
	Info Type = "info"
)

// Op names an operation (for invoke and completion events) or an informational
// event (for Info events).
type Op string

// Lock operations.
const (
	Acquire Op = "acquire"
	Release Op = "release"
	Refresh Op = "refresh"
)

// Guarded-resource operations.
const (
	Read  Op = "read"
	Write Op = "write"
)

// Operations of the reentrant, batch and stock workloads (the fenced one uses
// Read and Write with Fence set): nested lock calls by an owner that already
// holds the key, a batch task put on the queue (Value: task id), a sale's
// stock written (Value: units) and a purchase (Value: user id).
const (
	NestedAcquire Op = "nested-acquire"
	NestedRelease Op = "nested-release"
	Enqueue       Op = "enqueue"
	Restock       Op = "restock"
	Buy           Op = "buy"
)

// Informational events.
const (
	// Crash: the process died where it stood; a lease it held is never released.
	Crash Op = "crash"
	// FaultStart and FaultHeal bracket the time a fault was active.
	FaultStart Op = "fault-start"
	FaultHeal  Op = "fault-heal"
	// FaultStep is a later effect of an active fault (a killed node restarted).
	FaultStep Op = "fault-step"
	// MasterSwitch: the node serving as master changed (Target is the new one).
	MasterSwitch Op = "master-switch"
	// Stall: the harness itself stood still from From to the event's time
	// (its collector, its scheduler, its recorder): its clients could
	// neither act nor stamp what they saw, so a lease may have run out
	// under a holder that was not paused by any fault the run asked for.
	Stall Op = "harness-stall"
)

// Event is one line of history.jsonl.
//
// Invocation and completion of one operation share ID. Process identifies one
// incarnation of a client: after an unknown completion or a crash the client
// goes on under a new process id, so a process has at most one operation open.
type Event struct {
	Index   int64  `json:"i"`
	Time    int64  `json:"t"` // nanoseconds since the run's base time
	Type    Type   `json:"type"`
	Op      Op     `json:"op"`
	ID      int64  `json:"id,omitempty"`
	Process int    `json:"process"`
	Client  int    `json:"client"`
	Key     string `json:"key,omitempty"`
	// Lease identifies one acquisition: the random token the lock wrote, or a
	// harness-made id for locks that write a constant value. Release and
	// refresh name the lease they act for.
	Lease string `json:"lease,omitempty"`
	// TTL of the lease in milliseconds; 0 on an acquire means no expiry.
	TTLMillis int64 `json:"ttl_ms,omitempty"`
	// Fence is the fencing token a lock handed out with its lease, or the
	// token a write to a fenced resource carried.
	Fence int64 `json:"fence,omitempty"`
	// Value is what a read returned or what a write stored.
	Value *int64 `json:"value,omitempty"`
	// Seq is the guarded resource's own order of the operations it applied.
	Seq int64 `json:"seq,omitempty"`
	// Deleted reports, on a release completion, whether the key was really deleted.
	Deleted *bool `json:"deleted,omitempty"`
	// Attempts is how many tries an acquire made before it completed, so a
	// checker can tell how often it looked at the lock.
	Attempts int `json:"attempts,omitempty"`
	// Sent is when the attempt that won an acquire was sent, on the same
	// clock: earlier attempts of a waiting acquire definitely failed, so the
	// lease cannot have begun before it. 0 when the lock does not say.
	Sent int64 `json:"sent,omitempty"`
	// Tries lists, on an acquire's completion, each attempt the lock made
	// as [first command sent, last reply] in microseconds after the
	// invocation, as the harness saw them on the wire. Liveness judges a
	// failed acquire only on these: between attempts the client was not
	// looking at the lock (and a long gap is a stall of the harness).
	Tries [][2]int64 `json:"tries,omitempty"`
	// HeldFrom and HeldTo, on a failed acquire, bound when the lock held
	// the key for this client during the call although it did not grant
	// it (a late lease it refused and deleted). Both 0 when it did not.
	HeldFrom int64 `json:"held_from,omitempty"`
	HeldTo   int64 `json:"held_to,omitempty"`
	// From is, on a harness-stall, when the stall began (it ends at Time).
	From int64 `json:"from,omitempty"`
	// Fault names the fault of a FaultStart/FaultHeal event; Target what it hit.
	Fault  string `json:"fault,omitempty"`
	Target string `json:"target,omitempty"`
	// Error is why an operation failed or its outcome is unknown; on a
	// fault-heal, why the injection never took effect (a failover Sentinel
	// never carried out): its window is then no evidence that the lock
	// survived the fault.
	Error string `json:"error,omitempty"`
	// Run is set on the first line only: how the run was configured.
	Run *RunInfo `json:"run,omitempty"`
}

// RunInfo is the header of a history: enough to re-check it without the
// command line that produced it.
type RunInfo struct {
	ID string `json:"id"`
	// Lock is the lock setting the run ran: a registry name, or a lock
	// program's command line (exec:...), which is what replays it.
	Lock string `json:"lock"`
	// Program is a lock program's own name and version, from its hello
	// ("redis-py 4.3.4"): what people read, never a setting. Empty for a
	// lock in the harness's process.
	Program   string            `json:"program,omitempty"`
	Workload  string            `json:"workload,omitempty"`
	Topology  string            `json:"topology,omitempty"`
	Clients   int               `json:"clients"`
	Keys      int               `json:"keys"`
	TTLMillis int64             `json:"ttl_ms"`
	Seed      int64             `json:"seed"`
	Started   time.Time         `json:"started"`
	Params    map[string]string `json:"params,omitempty"`
	// RenewsUnseen: the lock renews its leases where the harness cannot
	// see it (locks.Entry.RenewsUnseen), so a lease may be alive until
	// its holder lets go of it plus a TTL, whatever refreshes the history
	// shows.
	RenewsUnseen bool `json:"renews_unseen,omitempty"`
}

// Settings returns the header's settings under the names the settings have
// today: headers written before the settings were declared once spelled
// names with '_' and wrote "default" or nothing for unset values, which
// are left out, and so is the lock program's name they kept among them
// (see Program).
func (r *RunInfo) Settings() map[string]string {
	out := make(map[string]string, len(r.Params))
	for k, v := range r.Params {
		if v == "" || v == "default" || k == legacyProgramParam {
			continue
		}
		if k == legacyFaultsParam {
			k = FaultsParam
		}
		out[strings.ReplaceAll(k, "_", "-")] = v
	}
	return out
}

// FaultsParam is the header param that lists the faults a run asked for,
// comma-separated; headers written before 2026-11-27 spelled it
// legacyFaultsParam, as the --nemesis flag it came from.
const (
	FaultsParam       = "faults"
	legacyFaultsParam = "nemesis"
)

// FaultsText is the header's list of requested faults as written ("a,b",
// "none" or empty), under either spelling.
func (r *RunInfo) FaultsText() string {
	if v, ok := r.Params[FaultsParam]; ok {
		return v
	}
	return r.Params[legacyFaultsParam]
}

// SetFaultsText sets the header's list of requested faults under today's
// spelling, dropping an older one.
func (r *RunInfo) SetFaultsText(v string) {
	delete(r.Params, legacyFaultsParam)
	r.Params[FaultsParam] = v
}

// IsLock reports whether op is an operation on a lock key (acquire,
// release, refresh and their nested forms), not on the guarded resource.
func (op Op) IsLock() bool {
	switch op {
	case Acquire, Release, Refresh, NestedAcquire, NestedRelease:
		return true
	}
	return false
}

// TTL returns the configured lease time of the run.
func (r *RunInfo) TTL() time.Duration { return time.Duration(r.TTLMillis) * time.Millisecond }

// Int64 returns a pointer to v, for Event.Value.
func Int64(v int64) *int64 { return &v }

// Bool returns a pointer to v, for Event.Deleted.
func Bool(v bool) *bool { return &v }

// IsCompletion reports whether t completes an operation.
func (t Type) IsCompletion() bool { return t == OK || t == Fail || t == Unknown }

func (t Type) valid() bool {
	switch t {
	case Invoke, OK, Fail, Unknown, Info:
		return true
	}
	return false
}

// String renders the event as its JSON line, for error messages and debugging.
func (e Event) String() string {
	type plain Event
	b, err := json.Marshal(plain(e))
	if err != nil {
		return fmt.Sprintf("event %d (%s %s): %v", e.Index, e.Type, e.Op, err)
	}
	return string(b)
}
