// Package nemesis holds the faults that break locks in production, each a
// small type that can start and heal itself and say whether it applies to a
// topology, and a seeded schedule that starts and heals them while a workload
// runs. Every start and heal goes into the history, so the checkers and the
// report know what was active when.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/sleep"
	"github.com/locktorture/locktorture/registry"
	"github.com/locktorture/locktorture/settings"
	"github.com/locktorture/locktorture/summary"
)

// Fault is one kind of failure. A fault is built fresh for each run (its
// Entry's New), starts and heals one injection at a time, and keeps whatever
// it needs to undo the last one.
type Fault interface {
	// Name is the name it is registered and recorded under.
	Name() string
	// Available returns an error saying why the fault cannot run on t
	// (a topology without Sentinel, a backend whose servers it cannot stop).
	Available(t *Target) error
	// Start injects the fault, choosing what it hits with rng. It calls
	// mark.Began, naming what it hit, at the instant the fault takes effect
	// (the kill, the toxic in place), so the history's window covers the
	// damage and nothing before it; later effects of the same injection (a
	// killed node restarted) go to mark.Step.
	Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error
	// Heal undoes what Start did. It is called exactly once after each
	// Start that took effect (returned nil, or called mark.Began before
	// failing), also when the run is ending.
	Heal(ctx context.Context, t *Target) error
}

// Marker stamps a fault's effects on the run's history as they happen.
type Marker interface {
	// Began marks the instant the fault took effect and what it hit.
	Began(target string)
	// Step marks a later effect of the same injection.
	Step(what string)
}

// quiet is the Marker of a fault used inside another one: the outer fault
// stamps the effects.
type quiet struct{}

func (quiet) Began(string) {}
func (quiet) Step(string)  {}

// Instant is implemented by faults that happen at one moment (a crash) and
// have nothing to heal: the schedule records their heal right after the
// start, so that the time after them does not count as time under a fault.
type Instant interface{ Instant() bool }

// Gate is a client process as faults see it: it can be stopped and killed.
type Gate interface {
	Pause()
	Resume()
	// Points lists the protocol points the process has passed, sorted.
	Points() []string
	// CrashAt kills the process when it next reaches the named point.
	CrashAt(point string)
	// Crash kills the process now: its next step fails.
	Crash()
}

// Clients gives client faults the live process of each client.
type Clients interface {
	Count() int
	// Gate of the client's live process, nil if it has none right now.
	Gate(client int) Gate
}

// Target is everything a fault can act on.
type Target struct {
	Topology cluster.Topology
	Network  *cluster.Network
	Clients  Clients
	TTL      time.Duration
	// Protocol, when set, lets faults wait for the clients' protocol
	// steps and aim at them (the client that just acquired, the master
	// holding a live lease); without it, or with Blind, they choose their
	// target and moment blindly, as --target random asks.
	Protocol Protocol
	Blind    bool
	// Patience bounds how long a fault waits for its target before it
	// gives up (default: 20 TTLs, at least 5 s).
	Patience time.Duration
	// ClientPatience bounds how long a fault waits for the seeded client
	// it aims at before it takes the same step of any client: with many
	// clients and long holds one client's numbered acquire can be a
	// minute away. A Schedule sets it to its interval, so that a fault
	// meant every interval lands within about two; zero: four TTLs, at
	// least a second.
	ClientPatience time.Duration
}

// ClientName is how the network names client i's paths.
func ClientName(i int) string { return fmt.Sprintf("c%d", i) }

// Options tune the faults; zero values take defaults derived from the TTL.
type Options = settings.Values

// The settings the built-in faults read, each declared by the faults that
// read it (Entry.Settings), so it becomes a flag and a spec key.
var (
	setLatency = settings.Setting{Name: "latency", Kind: settings.Duration, Default: "1.25 x TTL",
		Help: "latency fault delay: an acquire reply that arrives after the key expired, but before the next holder is done with it"}
	setJitter     = settings.Setting{Name: "jitter", Kind: settings.Duration, Default: "5% of the latency", Help: "latency fault jitter"}
	setLatencyAll = settings.Setting{Name: "latency-all", Kind: settings.Bool, Default: "false",
		Help: "latency fault delays every client, not one (everyone slow together rarely overlaps, one slow client among fast ones does)"}
	setDirection = settings.Setting{Name: "direction", Kind: settings.String, Choices: []string{"up", "down", "both"}, Default: "per fault",
		Help: "network faults: up (client to Redis), down (the replies) or both"}
	setLostReplyRate = settings.Setting{Name: "lost-reply-rate", Kind: settings.Float, Default: "0.2",
		Help: "share of the time lost-reply drops replies, in 20ms bursts"}
	setDowntime = settings.Setting{Name: "downtime", Kind: settings.Duration, Default: "0s",
		Help: "how long crash-redis keeps a node down before restarting it"}
	setPartitionClients = settings.Setting{Name: "partition-clients", Kind: settings.String, Choices: []string{"one", "all"}, Default: "seeded choice",
		Help: "partition-minority/-majority cut one or all clients"}
	setClockJump = settings.Setting{Name: "clock-jump", Kind: settings.Duration, Default: "2 x TTL",
		Help: "how far clock-jump moves a node's clock forward (every key on the node expires at once)"}
)

// Entry is one fault of the registry.
type Entry struct {
	Name    string
	Summary string
	// New builds the fault for one run from the values of the run's
	// settings, its own among them.
	New func(Options) Fault
	// Settings are the knobs this fault reads beyond the run's own: each
	// is a flag of torture run and a key of a matrix spec.
	Settings []settings.Setting
}

// About implements registry.Entry.
func (e Entry) About() (string, string) { return e.Name, e.Summary }

// Declared lists the settings the entry reads beyond the run's own.
func (e Entry) Declared() []settings.Setting { return e.Settings }

// Check implements registry.Entry.
func (e Entry) Check() error { return registry.NeedConstructor(e.New != nil) }

// Registry holds the faults a run can inject, by name.
type Registry = registry.Registry[Entry]

// NewRegistry returns an empty fault registry.
func NewRegistry() *Registry { return registry.New[Entry]("fault") }

// Builtin returns a registry of every fault this package implements; callers
// add their own with Register, the same call the built-ins go through.
func Builtin() *Registry {
	return registry.Of("fault",
		Entry{"latency", "toxiproxy latency (with jitter) on one client's (or every client's) path to one node, per direction", newLatency,
			[]settings.Setting{setLatency, setJitter, setLatencyAll, setDirection}},
		Entry{"partition", "cut one client from one node: its packets are dropped, one way or both", newPartition, []settings.Setting{setDirection}},
		Entry{"lost-reply", "the command runs on Redis, its reply never reaches the client (short bursts; go-redis retries replay it)", newLostReply,
			[]settings.Setting{setDirection, setLostReplyRate}},
		Entry{"pause-redis", "SIGSTOP a redis-server, SIGCONT at heal", newPauseRedis, nil},
		Entry{"crash-redis", "SIGKILL a redis-server and restart it on the same port (persistence as chosen)", newCrashRedis, []settings.Setting{setDowntime}},
		Entry{"pause-client", "stop-the-world pause of one client: its loop, watchdog and connections stop", newPauseClient, nil},
		Entry{"crash-client", "one client dies at a random point of the lock protocol and never releases", newCrashClient, nil},
		Entry{"failover", "kill or pause the master; Sentinel promotes a replica; the old master comes back as a replica", newFailover, nil},
		Entry{"failover-lossy", "cut replication from the master, then kill or pause it: the replica that wins lacks the newest locks", newFailoverLossy, nil},
		Entry{"failover-behind", "cut replication to one replica, make the other unpromotable, SENTINEL FAILOVER once a lock is on the master and that replica only: the one without it wins", newFailoverBehind, nil},
		Entry{"replication-delay", "delay the replication stream from the master to every replica (default: the TTL)", newReplicationDelay,
			[]settings.Setting{setLatency, setJitter}},
		Entry{"restart-empty", "redlock: SIGKILL a master and restart it at once with no persistence: it forgets the locks it acknowledged", newRestartEmpty, nil},
		Entry{"restart-delayed", "redlock control: SIGKILL a master, restart it empty only after the TTL has passed", newRestartDelayed, nil},
		Entry{"restart-fsync", "redlock control: every master runs AOF appendfsync always; SIGKILL one and restart it at once", newRestartFsync, nil},
		Entry{"partition-minority", "redlock: cut one client (or all) from a minority of the masters", newPartitionMinority,
			[]settings.Setting{setDirection, setPartitionClients}},
		Entry{"partition-majority", "redlock: cut one client (or all) from a majority of the masters", newPartitionMajority,
			[]settings.Setting{setDirection, setPartitionClients}},
		Entry{"clock-jump", "a node runs under libfaketime; its wall clock jumps forward by more than the TTL", newClockJump, []settings.Setting{setClockJump}},
		Entry{"clock-jump-partition", "redlock: cut one client from a minority, and jump the clock of a master it still reaches", newClockJumpPartition,
			[]settings.Setting{setClockJump, setDirection}},
		Entry{"sentinel-failover", "SENTINEL FAILOVER: a replica is promoted while the old master still serves some clients", newSentinelFailover, nil},
		Entry{"cluster-failover-lossy", "Redis Cluster: cut replication from a master holding a lock, wait for a lock written there only, CLUSTER FAILOVER FORCE its replica", newClusterFailoverLossy, nil},
		Entry{"slot-migration", "Redis Cluster: migrate the slot of a live lock to another master (IMPORTING/MIGRATING, MIGRATE, ASK redirects; SETSLOT NODE at heal)", newSlotMigration, nil},
	)
}

// Build makes one fault of each entry, for one run.
func Build(entries []Entry, opts Options) []Fault {
	out := make([]Fault, len(entries))
	for i, e := range entries {
		out[i] = e.New(opts)
	}
	return out
}

// Schedule starts and heals faults, one at a time, each chosen with the
// seed. A fault that aims at the protocol (see Aiming) is started at once
// and waits itself for the step it aims at (a client's n-th acquire, counted
// from the seed), so quiet time between such faults is counted in protocol
// steps and a rerun of the seed hits the same clients at the same steps.
// Any other fault (or every fault with Target.Blind) follows a quiet time
// of about Interval (Warmup before the first), then, with a Trigger, the
// next protocol event of that kind; it stays active for about Duration.
type Schedule struct {
	Faults   []Fault
	Interval time.Duration
	// Duration a fault stays active; default Interval.
	Duration time.Duration
	// Warmup is the quiet time before the first time-driven fault;
	// default Interval.
	Warmup time.Duration
	// Trigger, when set, starts each time-driven fault at the next such
	// protocol event after its quiet time (TriggerAcquired,
	// TriggerReleasing); empty starts it when the quiet time ends.
	Trigger  Trigger
	Seed     int64
	Recorder *history.Recorder
	Logf     func(format string, args ...any)

	mu    sync.Mutex
	stats Stats
}

// Trigger is the protocol event a time-driven fault starts on.
type Trigger string

// Triggers of a Schedule.
const (
	TriggerTime      Trigger = ""
	TriggerAcquired  Trigger = "acquire"
	TriggerReleasing Trigger = "release"
)

// ParseTrigger reads a --trigger value: time, acquire or release.
func ParseTrigger(s string) (Trigger, error) {
	switch s {
	case "", "time":
		return TriggerTime, nil
	case "acquire", "release":
		return Trigger(s), nil
	}
	return "", fmt.Errorf("trigger %q: want time, acquire or release", s)
}

// Aiming is implemented by faults that aim at the protocol when the
// target lets them (Target.Protocol set, not Blind): they wait in Start
// for their step, so the schedule does not wait a quiet time before them.
type Aiming interface{ Aims() bool }

// Stats count what a run's fault starts found (summary.json "faults").
type Stats = summary.FaultStats

// Stats returns the counts so far.
func (s *Schedule) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// count applies fn to the run's counts and to those of the fault named.
func (s *Schedule) count(fault string, fn func(*Stats, *summary.FaultCount)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stats.ByFault == nil {
		s.stats.ByFault = map[string]summary.FaultCount{}
	}
	c := s.stats.ByFault[fault]
	c.Started++
	fn(&s.stats, &c)
	s.stats.ByFault[fault] = c
}

// zeroCounts lists every fault of the schedule in the counts before the
// first start, so that one never started shows with 0 of 0.
func (s *Schedule) zeroCounts() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stats.ByFault == nil {
		s.stats.ByFault = map[string]summary.FaultCount{}
	}
	for _, f := range s.Faults {
		s.stats.ByFault[f.Name()] = s.stats.ByFault[f.Name()]
	}
}

// Check reports the first fault not available on t.
func (s *Schedule) Check(t *Target) error {
	for _, f := range s.Faults {
		if err := f.Available(t); err != nil {
			return fmt.Errorf("nemesis %s is not available here: %w", f.Name(), err)
		}
	}
	if len(s.Faults) > 0 && s.Interval <= 0 {
		return fmt.Errorf("nemesis interval must be positive, got %v", s.Interval)
	}
	if s.Trigger != TriggerTime && t.Protocol == nil {
		return fmt.Errorf("nemesis trigger %q needs the clients' protocol steps", s.Trigger)
	}
	return nil
}

// jitter returns d scaled by a factor in [0.5, 1.5).
func jitter(rng *rand.Rand, d time.Duration) time.Duration {
	return d/2 + time.Duration(rng.Int63n(int64(d)+1))
}

func aims(f Fault, t *Target) bool {
	a, ok := f.(Aiming)
	return ok && a.Aims() && t.aiming()
}

// Run runs the schedule until ctx ends; it heals whatever is active before
// it returns.
func (s *Schedule) Run(ctx context.Context, t *Target) {
	if len(s.Faults) == 0 {
		return
	}
	s.zeroCounts()
	logf := s.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	active := s.Duration
	if active <= 0 {
		active = s.Interval
	}
	quiet := s.Warmup
	if quiet <= 0 {
		quiet = s.Interval
	}
	if t.ClientPatience <= 0 && s.Interval > 0 {
		at := *t
		at.ClientPatience = s.Interval
		t = &at
	}
	rng := rand.New(rand.NewSource(s.Seed ^ 0x6e656d65736973))
	for n := 0; ; n++ {
		f := pick(s.Seed, n, s.Faults)
		// The draw that chose the fault before pick did: kept, so a
		// one-fault schedule (every matrix cell's) replays as it did.
		_ = rng.Int31()
		frng := rand.New(rand.NewSource(rng.Int63()))
		hold := jitter(rng, active)
		wait := jitter(rng, quiet)
		if !aims(f, t) {
			if !sleep.For(ctx, wait) {
				return
			}
			quiet = s.Interval
			if s.Trigger != TriggerTime && !s.trigger(ctx, t, f.Name()) {
				if ctx.Err() != nil {
					return
				}
				continue
			}
		}
		m := &marker{rec: s.Recorder, fault: f.Name()}
		if err := f.Start(ctx, t, frng, m); err != nil {
			if !m.began {
				switch {
				case ctx.Err() != nil:
					return
				case errors.Is(err, ErrNoTarget):
					s.count(f.Name(), func(st *Stats, c *summary.FaultCount) { st.GaveUp++; c.GaveUp++ })
					logf("nemesis %s: gave up: %v", f.Name(), err)
				default:
					s.count(f.Name(), func(st *Stats, c *summary.FaultCount) { st.Failed++; c.Failed++ })
					logf("nemesis %s: start: %v", f.Name(), err)
				}
				continue
			}
			logf("nemesis %s: start: %v", f.Name(), err)
			// It took effect before failing: heal what it did.
		}
		m.Began("") // a fault that never said when it took effect: now
		s.count(f.Name(), m.tally)
		if in, ok := f.(Instant); !ok || !in.Instant() {
			sleep.For(ctx, hold)
		}
		// Heal even when the run is ending: nothing may stay broken.
		if err := f.Heal(context.WithoutCancel(ctx), t); err != nil {
			logf("nemesis %s: heal: %v", f.Name(), err)
		}
		s.Recorder.Info(history.Event{Op: history.FaultHeal, Fault: f.Name(), Target: m.target()})
		if ctx.Err() != nil {
			return
		}
	}
}

// trigger waits for the schedule's trigger event; false if none came.
func (s *Schedule) trigger(ctx context.Context, t *Target, fault string) bool {
	kind := Acquired
	if s.Trigger == TriggerReleasing {
		kind = Releasing
	}
	_, err := t.next(ctx, Filter{Kind: kind, Client: -1})
	if err != nil && ctx.Err() == nil {
		s.count(fault, func(st *Stats, c *summary.FaultCount) { st.GaveUp++; c.GaveUp++ })
	}
	return err == nil
}

// marker records one injection's start and steps; the heal event repeats
// the start's target so the two pair up into a window.
type marker struct {
	rec   *history.Recorder
	fault string

	mu    sync.Mutex
	began bool
	what  string
	aim   *Aim
}

// Aimed implements Aimer.
func (m *marker) Aimed(a Aim) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.began {
		m.aim = &a
	}
}

// tally counts the start in st.
func (m *marker) tally(st *Stats, c *summary.FaultCount) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st.Started++
	c.TookEffect++
	if a := m.aim; a != nil {
		st.Aimed++
		if a.Waited {
			st.Waited++
		}
		if a.Late {
			st.Late++
		}
	}
}

func (m *marker) Began(target string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.began {
		return
	}
	e := history.Event{Op: history.FaultStart, Fault: m.fault, Target: target}
	if a := m.aim; a != nil {
		// What it aimed at: the client, its key and lease, and the step.
		if a.Client >= 0 {
			e.Client = a.Client
		}
		e.Key, e.Lease = a.Key, a.Lease
		if a.Step != "" {
			target += " [aimed at " + a.Step + "]"
			e.Target = target
		}
	}
	m.began, m.what = true, target
	m.rec.Info(e)
}

func (m *marker) Step(what string) {
	m.rec.Info(history.Event{Op: history.FaultStep, Fault: m.fault, Target: what})
}

func (m *marker) target() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.what
}
