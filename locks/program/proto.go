// Package program runs a lock as a program of its own, in any language: one
// operating-system process per client incarnation, driven over the JSON
// lines protocol of docs/lock-protocol.md on its stdin and stdout. The
// harness keeps the clock: it stamps every step, reply and renewal when it
// reads it; the one time it reads from the program is a step's
// CLOCK_MONOTONIC reading, which it checks against the moments it knows
// and dates a lease by where the step did not wait. A pause of the client is
// SIGSTOP of the program's process group, a crash SIGKILL, and a fresh
// process takes the client's place.
//
// The package holds both sides: Lock is the harness's side of one process;
// Serve is a program's side for a Go lock, which the reference client
// (exec-token: the built-in token lock out of process) runs.
package program

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
)

// Version is the protocol version this harness speaks to a program that
// serves one client; a program must answer the hello with the same.
const Version = 1

// VersionShared is the version of a program that serves the several
// clients of a shared lock object (--share) in one process, concurrently,
// as threads: requests name their client and may be in flight together.
const VersionShared = 2

// Message types.
const (
	typeHello   = "hello"
	typeAcquire = "acquire"
	typeRelease = "release"
	typeReply   = "reply"
	typeStep    = "step"
	typeGo      = "go"
	typeRenew   = "renew"
	typeRenewed = "renewed"
)

// Outcomes of a reply or a renewal.
const (
	outGranted     = "granted"
	outNotAcquired = "not_acquired"
	outRefused     = "refused"
	outUnknown     = "unknown"
	outDeleted     = "deleted"
	outNotDeleted  = "not_deleted"
	outExtended    = "extended"
	outLost        = "lost"
)

// Retry is the acquire pacing the harness gives every lock: the pause after
// the n-th failed attempt is min(MaxMs, FirstMs*2^(n-1)) plus a jitter of
// up to Jitter of it. A library with a fixed pause uses MaxMs.
type Retry struct {
	FirstMs int64   `json:"first_ms"`
	MaxMs   int64   `json:"max_ms"`
	Jitter  float64 `json:"jitter"`
}

// Hello is the harness's first line: what a Go lock gets in locks.Config.
type Hello struct {
	Type     string `json:"type"`
	Protocol int    `json:"protocol"`
	Client   int    `json:"client"`
	// Clients, in version 2, are the clients the program serves at once,
	// sharing one lock object per key.
	Clients []int    `json:"clients,omitempty"`
	Addrs   []string `json:"addrs"`
	TTLMs   int64    `json:"ttl_ms"`
	WaitMs  int64    `json:"wait_ms"`
	Retry   Retry    `json:"retry"`
	// CommandTimeoutMs is 0 for the library's own default.
	CommandTimeoutMs int64 `json:"command_timeout_ms"`
	// RedisRetries, when set, is how often the client retries a command
	// that failed on the network (--redis-retries; -1: never).
	RedisRetries *int  `json:"redis_retries,omitempty"`
	Seed         int64 `json:"seed"`
	// AwaitGo is the default of a request that does not say (every
	// request of this harness says): wait for the go of each step before
	// its command. This harness sets it: a lease is dated from its go, or
	// from the program's own reading of its clock, which both come before
	// the command; a step's receipt may come after it (the harness reads
	// late when it is busy), and a lease dated late shows a next holder
	// inside a lease that had in truth run out.
	AwaitGo bool `json:"await_go"`

	// Topology is single, redlock, sentinel or cluster: how to read Addrs
	// (the masters; the seed nodes on cluster) and the fields below.
	Topology string `json:"topology"`
	// Sentinels and MasterName are where a Sentinel-aware library asks
	// for the master (sentinel).
	Sentinels  []string `json:"sentinels,omitempty"`
	MasterName string   `json:"master_name,omitempty"`
	// AddrMap maps every address a server may announce (the master a
	// Sentinel names, CLUSTER SLOTS, MOVED, ASK) to the one to dial.
	AddrMap map[string]string `json:"addr_map,omitempty"`
}

// Promises are what a program says its lock does.
type Promises struct {
	Renewal  bool `json:"renewal"`
	Fencing  bool `json:"fencing"`
	Validity bool `json:"validity"`
}

// Request is an acquire or a release.
type Request struct {
	Type  string `json:"type"`
	ID    int64  `json:"id"`
	Key   string `json:"key"`
	Token string `json:"token"`
	// Client, in version 2, is the client the request is for: the
	// program serves it on that client's own thread.
	Client *int `json:"client,omitempty"`
	// AwaitGo: the program waits at each step of this request for its
	// go. The harness asks it only while a fault may act at the client's
	// next step (locks.Hooks.Armed), and of a program whose steps carry
	// their own clock reading (its hello's monotonic): the others await
	// every go, as the hello's await_go says.
	AwaitGo bool `json:"await_go"`
}

// goMsg lets a step's command go out.
type goMsg struct {
	Type string `json:"type"`
	Step int64  `json:"step"`
}

// message is any line a program prints; which fields count depends on Type.
type message struct {
	Type string `json:"type"`
	// hello
	Protocol *int     `json:"protocol"`
	Name     string   `json:"name"`
	Version  string   `json:"version"`
	Promises Promises `json:"promises"`
	// TTLGranularityMs: the lock's TTL is a whole number of these (1000
	// for a library that sets whole seconds); RetryGranularityMs likewise
	// for its pause between attempts. The harness refuses a run it cannot
	// express instead of one that tests another TTL than it records.
	TTLGranularityMs   int64 `json:"ttl_granularity_ms"`
	RetryGranularityMs int64 `json:"retry_granularity_ms"`
	// SkipsGo: the program sends at once when a request's await_go is
	// false, and needs no go lines then. This harness sends none for
	// such a request anyway.
	SkipsGo bool `json:"skips_go"`
	// Monotonic: every step the program sends carries mono_ns, its own
	// CLOCK_MONOTONIC reading; the harness may then let a request's
	// steps go without waiting (await_go false), since it dates a lease
	// from the reading rather than from the step's late receipt.
	Monotonic bool `json:"monotonic"`
	// KeyTemplate is the key the lock writes in Redis for a requested
	// key, {key} standing for it (":1:{key}" for Django's key function);
	// empty: the requested key itself. Topologies are those the program
	// serves; empty: every one.
	KeyTemplate string   `json:"key_template"`
	Topologies  []string `json:"topologies"`
	// reply
	ID         int64  `json:"id"`
	Outcome    string `json:"outcome"`
	Token      string `json:"token"`
	Fence      int64  `json:"fence"`
	ValidityMs int64  `json:"validity_ms"`
	// TTLMs, on a grant, is the TTL the lock wrote when it is not the
	// hello's (a library that adds a tolerance of its own); 0: the
	// hello's.
	TTLMs int64 `json:"ttl_ms"`
	// FromStep, on a grant, names the step whose command wrote the key,
	// for a try of several commands; 0: the request's last step.
	FromStep int64  `json:"from_step"`
	Error    string `json:"error"`
	Reason   string `json:"reason"`
	// refused
	HeldFromStep  int64 `json:"held_from_step"`
	LastWriteStep int64 `json:"last_write_step"`
	Cleaned       bool  `json:"cleaned"`
	// step; MonoNs is kept raw so that a reading that is not an integer
	// is refused in words naming the step
	Step    int64           `json:"step"`
	Point   string          `json:"point"`
	Request int64           `json:"request"`
	MonoNs  json.RawMessage `json:"mono_ns"`
	// renew, renewed; on a grant, the key written when the lock names
	// its own
	Renewal int64  `json:"renewal"`
	Key     string `json:"key"`
}

func parse(line []byte) (message, error) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return m, fmt.Errorf("field %q is a JSON %s; expected %s", te.Field, te.Value, jsonKind(te.Type.Kind()))
		}
		return m, fmt.Errorf("not a JSON object (%v)", err)
	}
	if m.Type == "" {
		return m, fmt.Errorf(`no "type"`)
	}
	return m, nil
}

// jsonKind names a field's Go kind as the protocol says it.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	return "a " + k.String()
}

// quote shows an offending line in an error: trimmed, at most 160 bytes.
func quote(line []byte) string {
	s := strings.TrimSpace(string(line))
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// writeLine writes v to w as one JSON line, the protocol's unit, holding mu
// so that the lines of two goroutines never interleave.
func writeLine(mu *sync.Mutex, w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	_, err = w.Write(append(b, '\n'))
	return err
}
