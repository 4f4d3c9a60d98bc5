package locktorture

import (
	"fmt"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/settings"
)

// Where a run setting may be given beyond the Go API.
const (
	inSpec   = 1 << iota // a matrix spec's defaults or cell
	inHeader             // the history header's params, and so the replay command
)

// field binds one of a run's own settings to its Options field: the one
// declaration the flags, the spec keys, the header params and the README's
// table all come from.
type field struct {
	settings.Setting
	where int
	get   func(*Options) any // the Go value, nil when unset
	set   func(*Options, any)
}

// bind makes a field of a setting stored in *T.
func bind[T comparable](s settings.Setting, where int, p func(*Options) *T) field {
	return field{Setting: s, where: where,
		get: func(o *Options) any {
			var zero T
			if v := *p(o); v != zero {
				return v
			}
			return nil
		},
		set: func(o *Options, v any) { *p(o) = v.(T) }}
}

// named makes a field of a setting stored as a string type of its own
// (cluster.Persistence, nemesis.Trigger, checker.FailOn).
func named[T ~string](s settings.Setting, where int, p func(*Options) *T) field {
	return field{Setting: s, where: where,
		get: func(o *Options) any {
			if v := *p(o); v != "" {
				return string(v)
			}
			return nil
		},
		set: func(o *Options, v any) { *p(o) = T(v.(string)) }}
}

func list(s settings.Setting, where int, p func(*Options) *[]string) field {
	return field{Setting: s, where: where,
		get: func(o *Options) any {
			if v := *p(o); len(v) > 0 {
				return v
			}
			return nil
		},
		set: func(o *Options, v any) { *p(o) = v.([]string) }}
}

func set(name string, k settings.Kind, def, help string) settings.Setting {
	return settings.Setting{Name: name, Kind: k, Default: def, Help: help, Owner: "run"}
}

// try gives a run setting the values torture hunt tries, its base first
// ("" leaves it unset: its default); a run setting without them is not
// searched (the lock, the duration, where the run is written).
func try(s settings.Setting, values ...string) settings.Setting {
	s.Search = values
	return s
}

// runFields are a run's own settings, in the order `torture run -h` lists
// them. Settings one fault, lock or workload reads are declared by that
// entry (its Settings), not here.
func runFields() []field {
	d := DefaultOptions()
	const both = inSpec | inHeader
	hold := field{Setting: try(set("hold", settings.Range, d.HoldMin.String()+".."+d.HoldMax.String(), "work time inside the lock, MIN..MAX"),
		"0.02ttl..0.1ttl", "0.3ttl..0.8ttl", "1.5ttl..2.5ttl", "3ttl..4ttl"),
		where: both,
		get:   func(o *Options) any { return settings.Span{Min: o.HoldMin, Max: o.HoldMax} },
		set:   func(o *Options, v any) { s := v.(settings.Span); o.HoldMin, o.HoldMax = s.Min, s.Max }}
	retries := field{Setting: try(set("redis-retries", settings.Int, "the library's (3)", "go-redis MaxRetries (-1: none)"), "", "-1"),
		where: both,
		get: func(o *Options) any {
			if o.RedisRetries == nil {
				return nil
			}
			return *o.RedisRetries
		},
		set: func(o *Options, v any) { n := v.(int); o.RedisRetries = &n }}
	// share is recorded only above 1, so the header of an unshared run
	// stays as it was before the setting existed.
	share := field{Setting: try(set("share", settings.Int, "1", "clients that share one lock object, as threads of one process (1..clients)"), "1", "2", "4"),
		where: both,
		get: func(o *Options) any {
			if o.Share > 1 {
				return o.Share
			}
			return nil
		},
		set: func(o *Options, v any) { o.Share = v.(int) }}
	return []field{
		bind(set("lock", settings.String, d.Lock, "lock under test (see 'torture list')"), 0, func(o *Options) *string { return &o.Lock }),
		bind(set("workload", settings.String, d.Workload, "what clients do (see 'torture list')"), inSpec, func(o *Options) *string { return &o.Workload }),
		bind(try(set("clients", settings.Int, fmt.Sprint(d.Clients), "concurrent clients"), "4", "1", "2", "8"), inSpec, func(o *Options) *int { return &o.Clients }),
		share,
		bind(try(set("keys", settings.Int, fmt.Sprint(d.Keys), "lock keys the clients contend for"), "1", "2"), inSpec, func(o *Options) *int { return &o.Keys }),
		bind(set("duration", settings.Duration, d.Duration.String(), "how long clients run"), both, func(o *Options) *time.Duration { return &o.Duration }),
		bind(try(set("ttl", settings.Duration, d.TTL.String(), "lock TTL"), "300ms", "1s"), inSpec, func(o *Options) *time.Duration { return &o.TTL }),
		hold,
		bind(try(set("overrun", settings.Float, "0", "probability that a hold outlasts the TTL (7/6 of it)"), "0", "0.2", "0.5"), both, func(o *Options) *float64 { return &o.Overrun }),
		bind(try(set("abandon", settings.Float, "0", "probability that a holder dies without releasing"), "0", "0.05"), both, func(o *Options) *float64 { return &o.Abandon }),
		bind(try(set("think", settings.Duration, "0s", "pause between a release and the next acquire"), "0s", "0.2ttl"), both, func(o *Options) *time.Duration { return &o.Think }),
		bind(try(set("wait", settings.Duration, "the TTL", "how long one acquire retries before giving up"), "1ttl", "0.5ttl", "3ttl"), both, func(o *Options) *time.Duration { return &o.Wait }),
		bind(try(set("retry-delay", settings.Duration, "a backoff from 1ms up to TTL/20", "pause between acquire attempts"), "", "0.1ttl"), both, func(o *Options) *time.Duration { return &o.RetryDelay }),
		{Setting: set("seed", settings.Int, "random, printed", "seed for every random choice of the run"),
			get: func(o *Options) any { return int(o.Seed) }, set: func(o *Options, v any) { o.Seed = int64(v.(int)) }},
		retries,
		bind(try(set("redis-timeout", settings.Duration, "the library's", "go-redis dial/read/write timeout"), "", "0.3ttl"), both, func(o *Options) *time.Duration { return &o.RedisTimeout }),
		bind(set("topology", settings.String, d.Topology, "redis deployment (see 'torture list')"), inSpec, func(o *Options) *string { return &o.Topology }),
		bind(try(set("nodes", settings.Int, "redlock: 5", "masters of a multi-master topology"), "", "3"), both, func(o *Options) *int { return &o.Nodes }),
		named(settings.Setting{Name: "persistence", Kind: settings.String, Choices: []string{"off", "everysec", "always"}, Default: "off",
			Help: "redis persistence (AOF fsync)", Owner: "run", Search: []string{"off", "everysec", "always"}}, both, func(o *Options) *cluster.Persistence { return &o.Persistence }),
		list(settings.Setting{Name: "faults", Aliases: []string{"nemesis"}, Kind: settings.List, Default: "none", Owner: "run",
			Help: "comma-separated faults to inject (see 'torture list')"}, inHeader, func(o *Options) *[]string { return &o.Faults }),
		list(set("checkers", settings.List, "none", "checkers to run beyond the lock's and the workload's (see 'torture list')"), both, func(o *Options) *[]string { return &o.Checkers }),
		bind(try(set("nemesis-interval", settings.Duration, d.NemesisInterval.String(), "mean quiet time between faults"), "1s", "0.5s", "3ttl"), both, func(o *Options) *time.Duration { return &o.NemesisInterval }),
		bind(try(set("nemesis-duration", settings.Duration, "the interval", "mean time a fault stays active"), "", "0.5ttl", "3ttl"), both, func(o *Options) *time.Duration { return &o.NemesisDuration }),
		bind(settings.Setting{Name: "target", Kind: settings.String, Choices: []string{TargetProtocol, TargetRandom}, Default: TargetProtocol, Owner: "run",
			Help:   "what faults aim at: protocol (the client that just acquired, the node holding a live lease) or random",
			Search: []string{TargetProtocol, TargetRandom}}, both, func(o *Options) *string { return &o.Target }),
		named(settings.Setting{Name: "trigger", Kind: settings.String, Choices: []string{"time", "acquire", "release"}, Default: "time", Owner: "run",
			Help:   "start faults that do not aim themselves on: time, acquire (the next ok acquire) or release (the next release sent)",
			Search: []string{"time", "acquire", "release"}}, both, func(o *Options) *nemesis.Trigger { return &o.NemesisTrigger }),
		bind(set("warmup", settings.Duration, "the interval", "quiet time before the first time-driven fault"), both, func(o *Options) *time.Duration { return &o.NemesisWarmup }),
		bind(set("check-timeout", settings.Duration, d.CheckTimeout.String(), "time limit of the linearizability check"), inSpec, func(o *Options) *time.Duration { return &o.CheckTimeout }),
		named(settings.Setting{Name: "fail-on", Kind: settings.String, Choices: []string{string(checker.FailOnAll), string(checker.FailOnSafety)}, Default: "all", Owner: "run",
			Help: "which anomalies fail: all, or safety (liveness anomalies are reported only)"}, 0, func(o *Options) *checker.FailOn { return &o.FailOn }),
		bind(set("stop-on-anomaly", settings.Bool, "false", "end the run at the first safety anomaly (faults are still healed, everything written)"), 0, func(o *Options) *bool { return &o.StopOnAnomaly }),
		bind(set("out", settings.String, d.OutDir, "directory that receives the run folder"), 0, func(o *Options) *string { return &o.OutDir }),
		bind(set("run-id", settings.String, "time, lock and seed", "name of the run folder"), 0, func(o *Options) *string { return &o.RunID }),
		bind(settings.Setting{Name: "backend", Kind: settings.String, Choices: []string{BackendLocal, BackendDocker, BackendExternal}, Default: BackendLocal, Owner: "run",
			Help: "where the servers run: local (processes), docker (containers), external (your own: --redis or --sentinel)"}, 0, func(o *Options) *string { return &o.Backend }),
		list(set("redis", settings.List, "", "--backend external: your servers, host:port,... (one for single, N for redlock)"), 0, func(o *Options) *[]string { return &o.Redis }),
		list(set("sentinel", settings.List, "", "--backend external --topology sentinel: your Sentinels, host:port,..."), 0, func(o *Options) *[]string { return &o.Sentinels }),
		bind(set("sentinel-master", settings.String, "mymaster", "the master's name your Sentinels monitor"), 0, func(o *Options) *string { return &o.SentinelMaster }),
		bind(set("key-prefix", settings.String, "--backend external: locktorture:RUN_ID:", "prefix of every key of the run"), 0, func(o *Options) *string { return &o.KeyPrefix }),
		bind(set("toxiproxy", settings.String, "embedded", "API URL of an external toxiproxy-server"), 0, func(o *Options) *string { return &o.Toxiproxy }),
	}
}

// Settings are every setting a run with regs takes, by name: the run's own,
// then those the registries' locks, faults and workloads declare. A name two
// of them declare with different kinds is an error.
func (r Registries) Settings() (*settings.Set, error) {
	r.Fill()
	var s settings.Set
	for _, f := range runFields() {
		if err := s.Add(f.Setting); err != nil {
			return nil, err
		}
	}
	for _, e := range r.Locks.Entries() {
		if err := s.Add(owned("lock "+e.Name, e.Settings)...); err != nil {
			return nil, err
		}
	}
	for _, e := range r.Faults.Entries() {
		if err := s.Add(owned("fault "+e.Name, e.Settings)...); err != nil {
			return nil, err
		}
	}
	for _, e := range r.Workloads.Entries() {
		if err := s.Add(owned("workload "+e.Name, e.Settings)...); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

func owned(owner string, ss []settings.Setting) []settings.Setting {
	out := make([]settings.Setting, len(ss))
	for i, s := range ss {
		if s.Owner == "" {
			s.Owner = owner
		}
		out[i] = s
	}
	return out
}

// SpecKey reports whether a matrix spec may set the named setting: the
// run's own spec settings and every entry's.
func SpecKey(s settings.Setting) bool {
	if s.Owner != "run" {
		return true
	}
	for _, f := range runFields() {
		if f.Name == s.Name {
			return f.where&inSpec != 0
		}
	}
	return false
}

// Set gives the named setting the value text, as `--name text` does: a run
// setting goes to its Options field, an entry's to Settings. Names and
// values are checked against the declarations of o.Registries.
func (o *Options) Set(name, text string) error {
	all, err := o.Registries.Settings()
	if err != nil {
		return err
	}
	decl, ok := all.Lookup(name)
	if !ok {
		return all.Unknown(name)
	}
	v, err := decl.Parse(text)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for _, f := range runFields() {
		if f.Name == decl.Name {
			f.set(o, v)
			return nil
		}
	}
	if o.Settings == nil {
		o.Settings = settings.Values{}
	}
	o.Settings[decl.Name] = v
	return nil
}

// values are the settings an entry is built with: the run's own that are
// set, and Settings.
func (o *Options) values() settings.Values {
	v := settings.Values{}
	for _, f := range runFields() {
		if x := f.get(o); x != nil {
			v[f.Name] = x
		}
	}
	for k, x := range o.Settings {
		v[k] = x
	}
	return v
}

// headerParams are the settings the history header records beyond its own
// fields: every set run setting marked for it and every entry setting, so
// the replay command gives them all back.
func (o *Options) headerParams(all *settings.Set) map[string]string {
	p := map[string]string{}
	for _, f := range runFields() {
		if f.where&inHeader == 0 {
			continue
		}
		if x := f.get(o); x != nil {
			p[f.Name] = f.Format(x)
		}
	}
	for k, x := range o.Settings {
		if decl, ok := all.Lookup(k); ok {
			p[k] = decl.Format(x)
		}
	}
	return p
}
