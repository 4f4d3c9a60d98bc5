// The crash-client fault: a client killed inside its lock protocol, which
// never releases what it holds (the crash a lock without atomic acquire
// cannot survive), with its entry.

package nemesis

import (
	"context"
	"fmt"
	"math/rand"
)

// crashClient kills one client inside its lock protocol, where it never
// releases what it holds; a fresh client takes its place.
//
// Aimed (the default), two starts in three (the first, the second, the
// fourth...) kill a client between the commands of its protocol (the
// points the lock reports beyond the workload's own: between SETNX and
// PEXPIRE, after the fencing INCR...), if the lock has any: once a seeded
// client's numbered acquire has shown which points there are, the next
// client to reach the chosen one dies there. That is the crash a lock
// without atomic acquire cannot survive, so a run meets it from its first
// start on, not when a seed is lucky. The third start, and every start on a
// lock without such points, kills the seeded client as a holder, at its
// numbered hold: the crash a lease must survive. Blind, it picks a point
// among those the process has passed, where it dies the next time it gets
// there.
type crashClient struct{ starts int }

// nameCrashClient is the fault's one name: its entry's and its own.
const nameCrashClient = "crash-client"

// crashClientEntry is the registry entry of crash-client, which reads no settings of its own.
func crashClientEntry() Entry {
	return Entry{Name: nameCrashClient,
		Summary: "one client dies at a random point of the lock protocol and never releases",
		New:     newCrashClient}
}

func newCrashClient(Options) Fault { return &crashClient{} }

func (*crashClient) Name() string { return nameCrashClient }

// Aims implements Aiming.
func (*crashClient) Aims() bool { return true }

func (*crashClient) Available(t *Target) error { return needClients(t) }

// workloadPoints are the protocol points every process passes whatever its
// lock: the waits and steps of the workload and the generic retry loop.
var workloadPoints = map[string]bool{"attempt": true, "wait": true, "hold": true, "work-done": true,
	"release": true, "watchdog": true}

// midPoints are the points of the lock's own protocol, between two of its
// commands, that the run's clients have reached.
func midPoints(t *Target) []string {
	var out []string
	for _, p := range t.Protocol.Points() {
		if !workloadPoints[p] {
			out = append(out, p)
		}
	}
	return out
}

func (f *crashClient) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	c := rng.Intn(t.Clients.Count())
	if t.aiming() {
		skip, between, pick := aimSkip(rng), f.starts%3 != 2, rng.Int()
		f.starts++
		how := "holding its lease"
		aim := Filter{Kind: Point, Client: c, Skip: skip, Points: []string{"hold"},
			Act: func(e ProtocolEvent) {
				// Marked first: the client records its crash as it dies.
				aimed(mark, aimAt(e))
				mark.Began(fmt.Sprintf("%s (killed at %s, %s)", ClientName(e.Client), e.Point, how))
				e.Gate.Crash()
			}}
		if between {
			// Its numbered acquire first, then the next point between
			// two commands of its protocol: which points the lock has
			// is known once the client has gone through it.
			if _, err := t.next(ctx, Filter{Kind: Acquired, Client: c, Skip: skip}); err != nil {
				return err
			}
			if mids := midPoints(t); len(mids) > 0 {
				how = "between the commands of its protocol"
				aim.Client, aim.Skip, aim.Points, aim.Next = -1, 0, []string{mids[pick%len(mids)]}, true
			}
		}
		_, err := t.next(ctx, aim)
		return err
	}
	g := t.Clients.Gate(c)
	if g == nil {
		return fmt.Errorf("client %d has no live process", c)
	}
	p := "attempt"
	if points := g.Points(); len(points) > 0 {
		p = points[rng.Intn(len(points))]
	}
	g.CrashAt(p)
	// The crash itself is recorded by the client when it reaches the point.
	mark.Began(fmt.Sprintf("%s (at its next %s)", ClientName(c), p))
	return nil
}

func (*crashClient) Heal(context.Context, *Target) error { return nil }

// Instant implements Instant: the crash is over once it is scheduled.
func (*crashClient) Instant() bool { return true }
