// Package nemesis holds the faults that break locks in production, each a
// small type that can start and heal itself and say whether it applies to a
// topology, and a seeded schedule that starts and heals them while a workload
// runs. Every start and heal goes into the history, so the checkers and the
// report know what was active when.
//
// This file holds the Fault API a fault is written against (Fault, Target,
// Entry, Registry), the same for the built-ins and for a fault registered
// from outside. Each built-in fault lives in a file of its own with its
// settings and its Entry (latency.go, partition.go, ...); settings read by
// several fault families are in settings.go; the Schedule is in schedule.go.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/registry"
	"github.com/locktorture/locktorture/settings"
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
	// failing), also when the run is ending. An error from Start or Heal
	// that wraps ErrNoEffect takes the start back: what the fault began
	// never came to what it exists to do.
	Heal(ctx context.Context, t *Target) error
}

// ErrNoEffect, wrapped in an error a fault's Start returns after
// mark.Began or in its Heal's, says the injection began but never did what
// the fault exists to do: Sentinel never carried out the failover it was
// asked for, a replica was never promoted. Its window stays in the history,
// but the heal event says why it proves nothing (history.Event.Error), and
// the run does not count it as taken effect: a run whose every start came
// to nothing tested nothing, and its verdict says so.
var ErrNoEffect = errors.New("the fault never took effect")

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
	// Topologies are the topologies the fault can act on (a failover needs
	// Sentinel, a restart-empty the independent masters of redlock);
	// empty: every one. A run on another is refused before any server
	// starts, and torture hunt tries the fault only where it applies.
	// Available still has the last word, on the servers the run started.
	Topologies []string
}

// Serves reports, as an error worded for the user that wraps
// ErrUnavailable, that the fault cannot act on topology (Topologies).
func (e Entry) Serves(topology string) error {
	if len(e.Topologies) == 0 || slices.Contains(e.Topologies, topology) {
		return nil
	}
	return &UnavailableError{Fault: e.Name, Err: fmt.Errorf("it acts on topology %s, not %s", strings.Join(e.Topologies, ", "), topology)}
}

// ErrUnavailable is what every error saying a fault cannot run where it
// was asked to wraps (UnavailableError), so a caller trying many
// combinations, as torture hunt does, can tell it from a harness failure.
var ErrUnavailable = errors.New("fault not available")

// UnavailableError says which fault cannot run here, and why.
type UnavailableError struct {
	Fault string
	Err   error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("nemesis %s is not available here: %v", e.Fault, e.Err)
}

func (e *UnavailableError) Unwrap() []error { return []error{ErrUnavailable, e.Err} }

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
// add their own with Register, the same call the built-ins go through. Each
// entry is declared in its fault's own file, with the settings it reads;
// this list only collects them, one registration per fault (keep its order).
func Builtin() *Registry {
	return registry.Of("fault",
		latencyEntry(),
		partitionEntry(),
		lostReplyEntry(),
		pauseRedisEntry(),
		crashRedisEntry(),
		pauseClientEntry(),
		crashClientEntry(),
		failoverEntry(),
		failoverLossyEntry(),
		failoverBehindEntry(),
		replicationDelayEntry(),
		restartEmptyEntry(),
		restartDelayedEntry(),
		restartFsyncEntry(),
		partitionMinorityEntry(),
		partitionMajorityEntry(),
		clockJumpEntry(),
		clockJumpPartitionEntry(),
		sentinelFailoverEntry(),
		clusterFailoverLossyEntry(),
		slotMigrationEntry(),
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
