// Package nemesis holds the faults that break locks in production, each a
// small type that can start and heal itself and say whether it applies to a
// topology, and a seeded schedule that starts and heals them while a workload
// runs. Every start and heal goes into the history, so the checkers and the
// report know what was active when.
package nemesis

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
)

// Fault is one kind of failure.
type Fault interface {
	// Name is the --nemesis name.
	Name() string
	// Available returns an error saying why the fault cannot run on t.
	Available(t *Target) error
	// Start injects the fault, choosing what it hits with rng, and returns
	// a short description of that target for the history.
	Start(ctx context.Context, t *Target, rng *rand.Rand) (string, error)
	// Heal undoes what Start did. It is called exactly once after each
	// successful Start, also when the run is ending.
	Heal(ctx context.Context, t *Target) error
}

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
}

// ClientName is how the network names client i's paths.
func ClientName(i int) string { return fmt.Sprintf("c%d", i) }

// Options tune the faults; zero values take defaults derived from the TTL.
type Options struct {
	// Latency and Jitter of the latency fault (default: 1.25 x TTL, 5%:
	// an acquire reply that arrives after the key expired, but before the
	// next holder is done with it).
	Latency, Jitter time.Duration
	// LatencyAll delays every client's path to the node instead of one
	// client's: everyone slow together rarely overlaps, one slow client
	// among fast ones does.
	LatencyAll bool
	// Direction of latency, partition and lost-reply: "up" (client to
	// Redis), "down" (Redis to client, the replies) or "both". Default:
	// down for latency and lost-reply, both for partition.
	Direction string
	// LostReplyRate is the share of the time replies are dropped while
	// lost-reply is active (in bursts of 20ms); default 0.2.
	LostReplyRate float64
	// Persistence a crashed Redis restarts with.
	Persistence cluster.Persistence
	// Downtime is how long a crashed Redis stays down before its restart.
	Downtime time.Duration
	// PartitionClients is whom partition-minority and partition-majority
	// cut off: "one" client, "all" clients, or "" for a seeded choice.
	PartitionClients string
	// ClockJump is how far clock-jump moves a node's clock forward each
	// time (default: 2 x TTL, so every key on the node expires at once).
	ClockJump time.Duration
}

// Entry is a registered fault.
type Entry struct {
	Name    string
	Summary string
	New     func(Options) Fault
}

// Entries lists every fault, for `torture list` and for New.
func Entries() []Entry {
	es := []Entry{
		{"latency", "toxiproxy latency (with jitter) on one client's (or every client's) path to one node, per direction", newLatency},
		{"partition", "cut one client from one node: its packets are dropped, one way or both", newPartition},
		{"lost-reply", "the command runs on Redis, its reply never reaches the client (short bursts; go-redis retries replay it)", newLostReply},
		{"pause-redis", "SIGSTOP a redis-server, SIGCONT at heal", newPauseRedis},
		{"crash-redis", "SIGKILL a redis-server and restart it on the same port (persistence as chosen)", newCrashRedis},
		{"pause-client", "stop-the-world pause of one client: its loop, watchdog and connections stop", newPauseClient},
		{"crash-client", "one client dies at a random point of the lock protocol and never releases", newCrashClient},
		{"failover", "kill or pause the master; Sentinel promotes a replica; the old master comes back as a replica", newFailover},
		{"failover-lossy", "cut replication from the master, then kill or pause it: the replica that wins lacks the newest locks", newFailoverLossy},
		{"replication-delay", "delay the replication stream from the master to every replica (default: the TTL)", newReplicationDelay},
		{"restart-empty", "redlock: SIGKILL a master and restart it at once with no persistence: it forgets the locks it acknowledged", newRestartEmpty},
		{"restart-delayed", "redlock control: SIGKILL a master, restart it empty only after the TTL has passed", newRestartDelayed},
		{"restart-fsync", "redlock control: every master runs AOF appendfsync always; SIGKILL one and restart it at once", newRestartFsync},
		{"partition-minority", "redlock: cut one client (or all) from a minority of the masters", newPartitionMinority},
		{"partition-majority", "redlock: cut one client (or all) from a majority of the masters", newPartitionMajority},
		{"clock-jump", "a node runs under libfaketime; its wall clock jumps forward by more than the TTL", newClockJump},
		{"clock-jump-partition", "redlock: cut one client from a minority, and jump the clock of a master it still reaches", newClockJumpPartition},
		{"sentinel-failover", "SENTINEL FAILOVER: a replica is promoted while the old master still serves some clients", newSentinelFailover},
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	return es
}

// New builds the faults named in a comma-separated list.
func New(list string, opts Options) ([]Fault, error) {
	var out []Fault
	seen := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		var found bool
		for _, e := range Entries() {
			if e.Name == name {
				out = append(out, e.New(opts))
				found = true
				break
			}
		}
		if !found {
			var names []string
			for _, e := range Entries() {
				names = append(names, e.Name)
			}
			return nil, fmt.Errorf("unknown nemesis %q (known: %s)", name, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// Schedule starts and heals faults at seeded random times: quiet for about
// Interval, one fault (chosen at random) active for about Duration, and so
// on. The same seed gives the same sequence of choices.
type Schedule struct {
	Faults   []Fault
	Interval time.Duration
	// Duration a fault stays active; default Interval.
	Duration time.Duration
	Seed     int64
	Recorder *history.Recorder
	Logf     func(format string, args ...any)
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
	return nil
}

// jitter returns d scaled by a factor in [0.5, 1.5).
func jitter(rng *rand.Rand, d time.Duration) time.Duration {
	return d/2 + time.Duration(rng.Int63n(int64(d)+1))
}

// Run runs the schedule until ctx ends; it heals whatever is active before
// it returns.
func (s *Schedule) Run(ctx context.Context, t *Target) {
	if len(s.Faults) == 0 {
		return
	}
	logf := s.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	active := s.Duration
	if active <= 0 {
		active = s.Interval
	}
	rng := rand.New(rand.NewSource(s.Seed ^ 0x6e656d65736973))
	for {
		if !wait(ctx, jitter(rng, s.Interval)) {
			return
		}
		f := s.Faults[rng.Intn(len(s.Faults))]
		frng := rand.New(rand.NewSource(rng.Int63()))
		hold := jitter(rng, active)
		what, err := f.Start(ctx, t, frng)
		if err != nil {
			logf("nemesis %s: start: %v", f.Name(), err)
			continue
		}
		s.Recorder.Info(history.Event{Op: history.FaultStart, Fault: f.Name(), Target: what})
		if in, ok := f.(Instant); !ok || !in.Instant() {
			wait(ctx, hold)
		}
		// Heal even when the run is ending: nothing may stay broken.
		if err := f.Heal(context.WithoutCancel(ctx), t); err != nil {
			logf("nemesis %s: heal: %v", f.Name(), err)
		}
		s.Recorder.Info(history.Event{Op: history.FaultHeal, Fault: f.Name(), Target: what})
		if ctx.Err() != nil {
			return
		}
	}
}

func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
