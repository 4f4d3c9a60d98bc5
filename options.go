package locktorture

import (
	"errors"
	"fmt"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/locks/program"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/settings"
	"github.com/locktorture/locktorture/workloads"
)

// Options describe one run. Zero values take the defaults of DefaultOptions.
type Options struct {
	// Lock, Workload and Topology name entries of Registries.
	Lock     string
	Workload string
	Topology string
	// Faults names the faults to inject (entries of Registries.Faults).
	Faults []string
	// Checkers names checkers to run beyond the lock checkers and the
	// workload's own.
	Checkers []string
	// Registries is where every name above is looked up; a nil field takes
	// that kind's built-ins. Register your own lock, fault, topology,
	// workload or checker in a clone of Builtin() to put it to work.
	Registries Registries

	Clients int
	// Share is how many clients use one lock object, as threads of one
	// process share a library's lock: clients 0..Share-1 share the first,
	// Share..2*Share-1 the next. It exists to show the bugs of a lock
	// object shared by threads (one thread's release deleting another
	// thread's lock); 1 (the default) gives every client its own.
	Share    int
	Keys     int
	Duration time.Duration
	TTL      time.Duration
	HoldMin  time.Duration
	HoldMax  time.Duration
	Overrun  float64
	Abandon  float64
	// Think is the pause between a release and the client's next acquire.
	Think time.Duration
	// Wait bounds each acquire's own retrying; default the TTL.
	Wait       time.Duration
	RetryDelay time.Duration
	Seed       int64

	// RedisRetries is go-redis's MaxRetries; nil keeps the library default
	// (3), since that is what users run. -1 disables retries.
	RedisRetries *int
	// RedisTimeout sets go-redis's dial/read/write timeouts; 0 keeps its defaults.
	RedisTimeout time.Duration
	RedisServer  string

	// Nodes is the number of masters of a multi-master topology.
	Nodes int
	// Persistence of every redis-server (off, everysec, always).
	Persistence cluster.Persistence
	// Toxiproxy is the API URL of an external toxiproxy-server; empty runs
	// one embedded in this process.
	Toxiproxy string

	// Backend runs the Redis servers: BackendLocal (default), BackendDocker
	// or BackendExternal (the user's own: Redis, or Sentinels and
	// SentinelMaster).
	Backend        string
	DockerHost     string // the Docker engine; empty: $DOCKER_HOST, else the local socket
	Redis          []string
	Sentinels      []string
	SentinelMaster string
	// KeyPrefix starts every key the workloads use; on the external
	// backend it defaults to "locktorture:<run id>:".
	KeyPrefix string

	NemesisInterval time.Duration
	// NemesisDuration is how long each fault stays active; default the interval.
	NemesisDuration time.Duration
	// Settings are the values of the settings the lock, fault and workload
	// entries declare for themselves (latency, direction, ...), by name;
	// Set fills them from text as a flag or a spec key does.
	Settings settings.Values
	// Target is how faults choose what they hit: TargetProtocol (the
	// default, "") aims them at the clients' protocol steps, TargetRandom
	// chooses blindly.
	Target string
	// NemesisTrigger starts each fault that does not aim itself at the
	// next such protocol event after its quiet time (acquire, release);
	// empty: when the quiet time ends.
	NemesisTrigger nemesis.Trigger
	// NemesisWarmup is the quiet time before the first such fault;
	// default the interval.
	NemesisWarmup time.Duration

	// OutDir receives the run folder OutDir/<RunID>/; empty writes nothing.
	OutDir string
	RunID  string

	// CheckTimeout bounds the linearizability check; past it the verdict is unknown.
	CheckTimeout time.Duration
	// FailOn says which anomalies make Result.Verdict invalid: all (the
	// default) or safety only; Report keeps every anomaly either way.
	FailOn checker.FailOn
	// StopOnAnomaly ends the run at the first safety anomaly the live
	// check confirms; faults are still healed and everything is written.
	StopOnAnomaly bool
	// StopWhen, when set, ends the run at the first anomaly the live check
	// confirms for which it returns true, of any severity: a matrix stops a
	// breaking cell once it has shown what it was expected to show.
	StopWhen func(checker.Anomaly) bool
	// Progress, when set, is called about once a second while the run goes on.
	Progress func(Status)
	// Logf receives harness messages; default discards them.
	Logf func(format string, args ...any)
}

// The backends a run's servers can stand on (Options.Backend).
const (
	BackendLocal    = "local"    // redis-server processes of the harness (default)
	BackendDocker   = "docker"   // containers of a locally built image
	BackendExternal = "external" // the user's own servers (Options.Redis, Options.Sentinels)
)

// Fault targeting (Options.Target).
const (
	// TargetProtocol aims every fault that can at the run's protocol: the
	// client that just acquired, the master holding a live lease, the lock
	// written on the master only, at steps numbered from the seed.
	TargetProtocol = "protocol"
	// TargetRandom chooses targets and moments blindly, with the seed.
	TargetRandom = "random"
)

// Status is the live view of a run for a status line (Options.Progress).
type Status struct {
	Elapsed   time.Duration
	Ops       int64
	OpsPerSec float64
	Acquired  int64
	Unknown   int64
	Crashes   int64
	// Anomalies counts the anomalies the checkers have confirmed so far
	// (the history is checked as it is recorded, a few TTLs behind).
	Anomalies int64
}

// Registries are the five extension points a run draws on.
type Registries struct {
	Locks      *locks.Registry
	Faults     *nemesis.Registry
	Topologies *cluster.Registry
	Workloads  *workloads.Registry
	Checkers   *checker.Registry
}

// Builtin returns registries holding every built-in lock, fault, topology,
// workload and checker. Each is a fresh copy: registering in it changes no
// other run. The locks are the algorithms of package locks and the in-tree
// lock programs (redis-py, node-redis, the reference client); no
// third-party Go library is among them, so that a module built on this one
// may pin whichever version of a library it ships (the adapters of module
// locks/libs register with libs.Register, as the torture command does).
func Builtin() Registries {
	return Registries{Locks: builtinLocks(), Faults: nemesis.Builtin(), Topologies: cluster.Builtin(),
		Workloads: workloads.Builtin(), Checkers: checker.Builtin()}
}

// builtinLocks is package locks' registry with the in-tree lock programs.
func builtinLocks() *locks.Registry {
	r := locks.Builtin()
	if err := program.Register(r); err != nil {
		panic(err) // a name clash between two built-ins is a programming error
	}
	return r
}

// Fill gives every registry left nil its built-in entries.
func (r *Registries) Fill() {
	if r.Locks == nil {
		r.Locks = builtinLocks()
	}
	if r.Faults == nil {
		r.Faults = nemesis.Builtin()
	}
	if r.Topologies == nil {
		r.Topologies = cluster.Builtin()
	}
	if r.Workloads == nil {
		r.Workloads = workloads.Builtin()
	}
	if r.Checkers == nil {
		r.Checkers = checker.Builtin()
	}
}

// DefaultOptions are the seed's numbers: a 3 s TTL, work well under it.
func DefaultOptions() Options {
	return Options{
		Lock: "token", Workload: "mutex", Topology: "single", NemesisInterval: 2 * time.Second, Clients: 4, Share: 1, Keys: 1, Duration: 10 * time.Second,
		TTL: 3 * time.Second, HoldMin: 10 * time.Millisecond, HoldMax: 100 * time.Millisecond,
		CheckTimeout: time.Minute, OutDir: "results",
	}
}

// UsageError marks a problem with the options rather than with the harness.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usage(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// IsUsage reports whether err is the caller's mistake (exit code 2 in the CLI,
// like every other error, but worded for the user).
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// ParseList splits a comma-separated flag value into names, dropping blanks.
func ParseList(s string) []string { return settings.SplitList(s) }
