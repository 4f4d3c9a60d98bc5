package locktorture

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/locks/libs"
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
// other run.
func Builtin() Registries {
	return Registries{Locks: libs.Builtin(), Faults: nemesis.Builtin(), Topologies: cluster.Builtin(),
		Workloads: workloads.Builtin(), Checkers: checker.Builtin()}
}

// Fill gives every registry left nil its built-in entries.
func (r *Registries) Fill() {
	if r.Locks == nil {
		r.Locks = libs.Builtin()
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

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// fill replaces zero values with the defaults; Validate then judges the
// result, so a value a user set explicitly is judged the same way whether it
// came from a flag, a matrix spec or a Go test.
func (o *Options) fill() {
	d := DefaultOptions()
	o.Registries.Fill()
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&o.Lock, d.Lock)
	def(&o.Workload, d.Workload)
	def(&o.Topology, d.Topology)
	for _, f := range []struct {
		v *time.Duration
		d time.Duration
	}{{&o.NemesisInterval, d.NemesisInterval}, {&o.Duration, d.Duration}, {&o.TTL, d.TTL}, {&o.CheckTimeout, d.CheckTimeout}} {
		if *f.v == 0 {
			*f.v = f.d
		}
	}
	if o.Wait == 0 {
		o.Wait = o.TTL
	}
	if o.Clients == 0 {
		o.Clients = d.Clients
	}
	if o.Keys == 0 {
		o.Keys = d.Keys
	}
	if o.Share == 0 {
		o.Share = 1
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// WithDefaults returns o with every zero value replaced by its default, as
// Run sees it: validate a partial Options (a matrix cell's) with
// o.WithDefaults().Validate().
func (o Options) WithDefaults() Options {
	o.fill()
	return o
}

// Validate reports the first option out of range or naming nothing
// registered, as a *UsageError. It judges the options as given: zero values
// that Run would replace with defaults are errors here, so a caller (the
// CLI) that starts from DefaultOptions catches an explicit --clients 0.
func (o Options) Validate() error {
	_, err := o.validate()
	return err
}

// validate is Validate, returning what the options name, looked up once.
func (o Options) validate() (plan, error) {
	o.Registries.Fill()
	switch {
	case o.Clients < 1 || o.Clients > 10000:
		return plan{}, usage("--clients %d: want 1..10000", o.Clients)
	case o.Share < 1 || o.Share > o.Clients:
		return plan{}, usage("--share %d: want 1..%d (at most --clients)", o.Share, o.Clients)
	case o.Keys < 1 || o.Keys > 100000:
		return plan{}, usage("--keys %d: want 1..100000", o.Keys)
	case o.Duration <= 0:
		return plan{}, usage("--duration %v: want a positive duration", o.Duration)
	case o.TTL < time.Millisecond:
		return plan{}, usage("--ttl %v: must be at least 1ms", o.TTL)
	case o.HoldMin < 0 || o.HoldMax < o.HoldMin:
		return plan{}, usage("--hold %v..%v: want 0 <= MIN <= MAX", o.HoldMin, o.HoldMax)
	case o.Overrun < 0 || o.Overrun > 1:
		return plan{}, usage("--overrun %v: want a probability in [0,1]", o.Overrun)
	case o.Abandon < 0 || o.Abandon > 1:
		return plan{}, usage("--abandon %v: want a probability in [0,1]", o.Abandon)
	case o.Wait < 0 || o.RetryDelay < 0 || o.Think < 0:
		return plan{}, usage("--wait, --retry-delay and --think must not be negative")
	case o.NemesisInterval <= 0 || o.NemesisDuration < 0:
		return plan{}, usage("--nemesis-interval must be positive and --nemesis-duration not negative")
	case o.Nodes < 0 || o.Nodes > 15:
		return plan{}, usage("--nodes %d: want 1..15", o.Nodes)
	case o.CheckTimeout <= 0:
		return plan{}, usage("--check-timeout %v: want a positive duration", o.CheckTimeout)
	case o.RedisTimeout < 0:
		return plan{}, usage("--redis-timeout %v: must not be negative", o.RedisTimeout)
	case o.RedisRetries != nil && *o.RedisRetries < -1:
		return plan{}, usage("--redis-retries %d: want -1 or more", *o.RedisRetries)
	case o.FailOn != "" && o.FailOn != checker.FailOnAll && o.FailOn != checker.FailOnSafety:
		return plan{}, usage("fail-on %q: want all or safety", o.FailOn)
	case o.Target != "" && o.Target != TargetProtocol && o.Target != TargetRandom:
		return plan{}, usage("--target %q: want protocol or random", o.Target)
	case o.NemesisWarmup < 0:
		return plan{}, usage("--warmup %v: must not be negative", o.NemesisWarmup)
	case o.RunID != "" && !runIDPattern.MatchString(o.RunID):
		return plan{}, usage("run id %q: use letters, digits, '.', '_' and '-'", o.RunID)
	}
	if _, err := nemesis.ParseTrigger(string(o.NemesisTrigger)); err != nil {
		return plan{}, &UsageError{err}
	}
	if _, err := cluster.ParsePersistence(string(o.Persistence)); err != nil {
		return plan{}, &UsageError{err}
	}
	if err := o.validateBackend(); err != nil {
		return plan{}, err
	}
	if err := o.checkSettings(); err != nil {
		return plan{}, err
	}
	return o.resolve()
}

// plan is what the options name, looked up once.
type plan struct {
	lock     locks.Entry
	workload workloads.Entry
	topology cluster.TopologyEntry
	faults   []nemesis.Entry
	checkers []string // the workload's, then the run's own
	settings *settings.Set
}

func (o Options) resolve() (plan, error) {
	var p plan
	var err error
	if p.lock, err = lockEntry(o.Registries.Locks, o.Lock); err != nil {
		return p, &UsageError{err}
	}
	if p.workload, err = o.Registries.Workloads.Get(o.Workload); err != nil {
		return p, &UsageError{err}
	}
	if p.topology, err = o.Registries.Topologies.Get(o.Topology); err != nil {
		return p, &UsageError{err}
	}
	if p.faults, err = o.Registries.Faults.Lookup(o.Faults); err != nil {
		return p, &UsageError{err}
	}
	if p.settings, err = o.Registries.Settings(); err != nil {
		return p, &UsageError{err}
	}
	p.checkers = append(append([]string(nil), p.workload.Checkers...), o.Checkers...)
	if _, err := checker.Select(o.Registries.Checkers, p.checkers, checker.MutexOptions{}); err != nil {
		return p, usage("workload %s with checkers %v: %v", o.Workload, o.Checkers, err)
	}
	return p, nil
}

// ParseList splits a comma-separated flag value into names, dropping blanks.
func ParseList(s string) []string { return settings.SplitList(s) }

// shape is the hold every workload shares: --keys, --hold, --overrun,
// --abandon, --think.
func (o Options) shape() workloads.MutexOptions {
	return workloads.MutexOptions{Keys: o.Keys, HoldMin: o.HoldMin, HoldMax: o.HoldMax, TTL: o.TTL,
		Overrun: o.Overrun, Abandon: o.Abandon, Think: o.Think, KeyPrefix: o.keyPrefix(), Settings: o.values()}
}
