package locktorture

import (
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/locks/program"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/settings"
	"github.com/locktorture/locktorture/workloads"
)

// plan is a run's options resolved once, before the first stage: the
// defaults filled in, every value judged, every name looked up, and what
// the stages derive from the options worked out here. The stages read it
// and never write it, so no option is defaulted or judged in two places,
// and what a stage sees is what the header records.
type plan struct {
	// opts are the options with every default, the run id and the key
	// prefix filled in.
	opts     Options
	lock     locks.Entry
	workload workloads.Entry
	topology cluster.TopologyEntry
	faults   []nemesis.Entry
	checkers []string // the workload's, then the run's own
	settings *settings.Set
	// values are the settings every entry is built with: the run's own
	// that are set, and Options.Settings.
	values settings.Values
	// nodes is how many masters a multi-master topology has: --nodes, or
	// on a user's own servers as many as --redis gives.
	nodes int
	// master is the name the user's Sentinels monitor.
	master string
	// stopWhen ends the run at the first anomaly it accepts (StopWhen, or
	// a safety anomaly under StopOnAnomaly); nil runs to the end.
	stopWhen func(checker.Anomaly) bool
	// trigger is what time-driven faults start on ("time" is none).
	trigger nemesis.Trigger
}

// newPlan resolves opts once: zero values take their defaults, the result
// is judged as Validate judges it (a *UsageError), and the names are looked
// up. A run without a RunID gets one from the time, the lock and the seed.
func newPlan(opts Options) (*plan, error) {
	opts.fill()
	p, err := opts.validate()
	if err != nil {
		return nil, err
	}
	if opts.RunID == "" {
		opts.RunID = fmt.Sprintf("%s-%s-seed%d", time.Now().Format("20060102-150405"), idPart(opts.Lock), opts.Seed)
	}
	opts.KeyPrefix = opts.keyPrefix()
	p.opts, p.values = opts, opts.values()
	p.nodes = opts.Nodes
	if opts.Backend == BackendExternal && p.nodes == 0 {
		p.nodes = len(opts.Redis)
	}
	p.master = opts.SentinelMaster
	if p.master == "" {
		p.master = "mymaster" // the name in Redis's sample sentinel.conf
	}
	switch {
	case opts.StopWhen != nil:
		p.stopWhen = opts.StopWhen
	case opts.StopOnAnomaly:
		p.stopWhen = func(a checker.Anomaly) bool { return a.Severity == checker.SeveritySafety }
	}
	return p, nil
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
// It judges, and looks up, and nothing else: newPlan derives the rest.
func (o Options) validate() (*plan, error) {
	o.Registries.Fill()
	switch {
	case o.Clients < 1 || o.Clients > 10000:
		return nil, usage("--clients %d: want 1..10000", o.Clients)
	case o.Share < 1 || o.Share > o.Clients:
		return nil, usage("--share %d: want 1..%d (at most --clients)", o.Share, o.Clients)
	case o.Keys < 1 || o.Keys > 100000:
		return nil, usage("--keys %d: want 1..100000", o.Keys)
	case o.Duration <= 0:
		return nil, usage("--duration %v: want a positive duration", o.Duration)
	case o.TTL < time.Millisecond:
		return nil, usage("--ttl %v: must be at least 1ms", o.TTL)
	case o.HoldMin < 0 || o.HoldMax < o.HoldMin:
		return nil, usage("--hold %v..%v: want 0 <= MIN <= MAX", o.HoldMin, o.HoldMax)
	case o.Overrun < 0 || o.Overrun > 1:
		return nil, usage("--overrun %v: want a probability in [0,1]", o.Overrun)
	case o.Abandon < 0 || o.Abandon > 1:
		return nil, usage("--abandon %v: want a probability in [0,1]", o.Abandon)
	case o.Wait < 0 || o.RetryDelay < 0 || o.Think < 0:
		return nil, usage("--wait, --retry-delay and --think must not be negative")
	case o.NemesisInterval <= 0 || o.NemesisDuration < 0:
		return nil, usage("--nemesis-interval must be positive and --nemesis-duration not negative")
	case o.Nodes < 0 || o.Nodes > 15:
		return nil, usage("--nodes %d: want 1..15", o.Nodes)
	case o.CheckTimeout <= 0:
		return nil, usage("--check-timeout %v: want a positive duration", o.CheckTimeout)
	case o.RedisTimeout < 0:
		return nil, usage("--redis-timeout %v: must not be negative", o.RedisTimeout)
	case o.RedisRetries != nil && *o.RedisRetries < -1:
		return nil, usage("--redis-retries %d: want -1 or more", *o.RedisRetries)
	case o.FailOn != "" && o.FailOn != checker.FailOnAll && o.FailOn != checker.FailOnSafety:
		return nil, usage("fail-on %q: want all or safety", o.FailOn)
	case o.Target != "" && o.Target != TargetProtocol && o.Target != TargetRandom:
		return nil, usage("--target %q: want protocol or random", o.Target)
	case o.NemesisWarmup < 0:
		return nil, usage("--warmup %v: must not be negative", o.NemesisWarmup)
	case o.RunID != "" && !runIDPattern.MatchString(o.RunID):
		return nil, usage("run id %q: use letters, digits, '.', '_' and '-'", o.RunID)
	}
	trigger, err := nemesis.ParseTrigger(string(o.NemesisTrigger))
	if err != nil {
		return nil, &UsageError{err}
	}
	if _, err := cluster.ParsePersistence(string(o.Persistence)); err != nil {
		return nil, &UsageError{err}
	}
	if err := o.validateBackend(); err != nil {
		return nil, err
	}
	if err := o.checkSettings(); err != nil {
		return nil, err
	}
	p, err := o.resolve()
	if err != nil {
		return nil, err
	}
	p.trigger = trigger
	return p, nil
}

// resolve looks up what the options name, once.
func (o Options) resolve() (*plan, error) {
	p := &plan{}
	var err error
	if p.lock, err = lockEntry(o.Registries.Locks, o.Lock); err != nil {
		return nil, &UsageError{err}
	}
	if p.workload, err = o.Registries.Workloads.Get(o.Workload); err != nil {
		return nil, &UsageError{err}
	}
	if p.topology, err = o.Registries.Topologies.Get(o.Topology); err != nil {
		return nil, &UsageError{err}
	}
	if err := p.lock.Serves(p.topology.Name); err != nil {
		return nil, &UsageError{err}
	}
	if p.faults, err = o.Registries.Faults.Lookup(o.Faults); err != nil {
		return nil, &UsageError{err}
	}
	for _, f := range p.faults {
		if err := f.Serves(p.topology.Name); err != nil {
			return nil, &UsageError{err}
		}
	}
	if p.settings, err = o.Registries.Settings(); err != nil {
		return nil, &UsageError{err}
	}
	p.checkers = append(append([]string(nil), p.workload.Checkers...), o.Checkers...)
	if _, err := checker.Select(o.Registries.Checkers, p.checkers, checker.MutexOptions{}); err != nil {
		return nil, usage("workload %s with checkers %v: %v", o.Workload, o.Checkers, err)
	}
	return p, nil
}

// shape is the hold every workload shares: --keys, --hold, --overrun,
// --abandon, --think.
func (p *plan) shape() workloads.MutexOptions {
	o := p.opts
	return workloads.MutexOptions{Keys: o.Keys, HoldMin: o.HoldMin, HoldMax: o.HoldMax, TTL: o.TTL,
		Overrun: o.Overrun, Abandon: o.Abandon, Think: o.Think, KeyPrefix: o.KeyPrefix, Settings: p.values}
}

// validateBackend judges the backend options as given.
func (o Options) validateBackend() error {
	switch o.Backend {
	case "", BackendLocal, BackendDocker:
		if len(o.Redis) > 0 || len(o.Sentinels) > 0 {
			return usage("--redis and --sentinel name a user's own servers: use them with --backend external")
		}
		return nil
	case BackendExternal:
	default:
		return usage("--backend %q: want local, docker or external", o.Backend)
	}
	for _, a := range append(append([]string(nil), o.Redis...), o.Sentinels...) {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return usage("--redis/--sentinel address %q: want host:port", a)
		}
	}
	topo := o.Topology
	if topo == "" {
		topo = DefaultOptions().Topology
	}
	switch {
	case topo == "sentinel" && len(o.Sentinels) == 0:
		return usage("--backend external --topology sentinel needs the Sentinels' addresses (--sentinel host:port,...)")
	case topo == "sentinel" && len(o.Redis) > 0:
		return usage("--backend external --topology sentinel asks the Sentinels for the master: drop --redis")
	case topo != "sentinel" && len(o.Sentinels) > 0:
		return usage("--sentinel needs --topology sentinel")
	case topo != "sentinel" && len(o.Redis) == 0:
		return usage("--backend external needs the servers' addresses (--redis host:port,...)")
	case topo == "single" && len(o.Redis) != 1:
		return usage("--topology single takes one server, --redis gives %d", len(o.Redis))
	case topo == "redlock" && o.Nodes != 0 && o.Nodes != len(o.Redis):
		return usage("--nodes %d but --redis gives %d servers", o.Nodes, len(o.Redis))
	}
	return nil
}

// keyPrefix is the prefix of every key of the run: the user's, or on a
// user's own Redis one unique to the run, so that its keys can be told from
// the user's and deleted at the end.
func (o Options) keyPrefix() string {
	if o.KeyPrefix == "" && o.Backend == BackendExternal {
		return "locktorture:" + o.RunID + ":"
	}
	return o.KeyPrefix
}

// checkSettings refuses entry settings no entry declares, or of the wrong
// Go type (set through the Go API).
func (o *Options) checkSettings() error {
	all, err := o.Registries.Settings()
	if err != nil {
		return &UsageError{err}
	}
	for k, v := range o.Settings {
		decl, ok := all.Lookup(k)
		switch {
		case !ok:
			return &UsageError{all.Unknown(k)}
		case decl.Owner == "run":
			return usage("setting %q is a field of Options, not one of Settings", k)
		case !decl.Accepts(v):
			return usage("setting %q: want a %s, got %T", k, decl.Kind, v)
		}
	}
	return nil
}

// lockEntry looks a lock up by name; a name exec:COMMAND ARGS... is a lock
// program run from its command line (locks/program).
func lockEntry(r *locks.Registry, name string) (locks.Entry, error) {
	if program.IsExec(name) {
		return program.Exec(name)
	}
	return r.Get(name)
}

var unsafeIDChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// idPart is name as a part of a run id (a folder name): a lock named by
// its command line (exec:./lock --flag) keeps only letters, digits, '.',
// '_' and '-'.
func idPart(name string) string {
	return strings.Trim(unsafeIDChars.ReplaceAllString(name, "_"), "_")
}
