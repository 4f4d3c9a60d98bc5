// The Schedule: the seeded loop that starts and heals a run's faults one at
// a time while the workload runs, and stamps every start, step and heal on
// the history, so that the checkers and the report know which fault was
// active when a lock broke. It lives apart from the Fault API (nemesis.go)
// because a fault needs none of it to be written.

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"time"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/sleep"
	"github.com/locktorture/locktorture/summary"
)

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
			return &UnavailableError{Fault: f.Name(), Err: err}
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

// firstAims reports whether the schedule's first fault aims at the
// protocol on t, and so begins by waiting for a protocol step.
func (s *Schedule) firstAims(t *Target) bool {
	return len(s.Faults) > 0 && aims(pick(s.Seed, 0, s.Faults), t)
}

// firstAimWait bounds how long Start waits for the first aimed fault to
// begin waiting for its step: a Start that reads the topology first takes
// a few milliseconds.
const firstAimWait = 200 * time.Millisecond

// Start runs the schedule in the background until ctx ends (see Run) and
// returns a channel closed once it has healed everything. When its first
// fault aims at the protocol, Start returns once that fault waits for its
// step, or after firstAimWait: started together, the clients' first
// attempts come within milliseconds, before a fault that reads the
// topology first is ready for them; and with long holds the next attempt
// on a free key may be seconds later.
func (s *Schedule) Start(ctx context.Context, t *Target) <-chan struct{} {
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx, t) }()
	w, ok := t.Protocol.(interface{ Waiting() bool })
	if !ok || !s.firstAims(t) {
		return done
	}
	deadline := time.Now().Add(firstAimWait)
	for !w.Waiting() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	return done
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
	active, quiet, t := s.pace(t)
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
		startErr := f.Start(ctx, t, frng, m)
		if startErr != nil && !m.began {
			if s.noStart(ctx, f, startErr, logf) {
				return
			}
			continue
		}
		if startErr != nil {
			logf("nemesis %s: start: %v", f.Name(), startErr)
			// It took effect before failing: heal what it did.
		}
		m.Began("") // a fault that never said when it took effect: now
		if in, ok := f.(Instant); !ok || !in.Instant() {
			sleep.For(ctx, hold)
		}
		s.heal(ctx, t, f, m, startErr, logf)
		if ctx.Err() != nil {
			return
		}
	}
}

// pace is how long a fault stays active and the first quiet stretch
// lasts, and the target with a client's patience of one interval unless
// it sets its own.
func (s *Schedule) pace(t *Target) (active, quiet time.Duration, _ *Target) {
	active = s.Duration
	if active <= 0 {
		active = s.Interval
	}
	quiet = s.Warmup
	if quiet <= 0 {
		quiet = s.Interval
	}
	if t.ClientPatience <= 0 && s.Interval > 0 {
		at := *t
		at.ClientPatience = s.Interval
		t = &at
	}
	return active, quiet, t
}

// noStart counts a start that failed before it took effect, and reports
// whether the schedule is over (the run ended while the fault waited).
func (s *Schedule) noStart(ctx context.Context, f Fault, err error, logf func(string, ...any)) (over bool) {
	switch {
	case ctx.Err() != nil:
		// The run ended while it waited: say for what, since a fault
		// that never took effect leaves the run untested.
		var we *WaitError
		if errors.As(err, &we) {
			s.count(f.Name(), func(_ *Stats, c *summary.FaultCount) { c.Unfinished++; c.WaitedFor = waitedFor(we) })
		}
		return true
	case errors.Is(err, ErrNoTarget):
		s.count(f.Name(), func(st *Stats, c *summary.FaultCount) {
			st.GaveUp++
			c.GaveUp++
			c.WaitedFor = strings.Join(strings.Fields(err.Error()), " ")
		})
		logf("nemesis %s: gave up: %v", f.Name(), err)
	default:
		s.count(f.Name(), func(st *Stats, c *summary.FaultCount) { st.Failed++; c.Failed++ })
		logf("nemesis %s: start: %v", f.Name(), err)
	}
	return false
}

// heal heals f, even when the run is ending (nothing may stay broken),
// counts the start as taken effect unless it or the heal says otherwise,
// and records the heal.
func (s *Schedule) heal(ctx context.Context, t *Target, f Fault, m *marker, startErr error, logf func(string, ...any)) {
	healErr := f.Heal(context.WithoutCancel(ctx), t)
	heal := history.Event{Op: history.FaultHeal, Fault: f.Name(), Target: m.target()}
	if healErr != nil {
		logf("nemesis %s: heal: %v", f.Name(), healErr)
	}
	if heal.Error = noEffect(startErr, healErr); heal.Error != "" {
		s.count(f.Name(), func(st *Stats, c *summary.FaultCount) { st.Failed++; c.Failed++ })
		logf("nemesis %s: this start is not counted as taken effect: %s", f.Name(), heal.Error)
	} else {
		s.count(f.Name(), m.tally)
	}
	s.Recorder.Info(heal)
}

// waitedFor is a WaitError in a note's words: what it waited for, what it
// saw and what would match, without the run's own end.
func waitedFor(we *WaitError) string {
	w := *we
	w.Err = nil
	return w.Error()
}

// noEffect is, on one line, why an injection never took effect, from the
// errors of its start and heal that wrap ErrNoEffect; "" when it did.
func noEffect(errs ...error) string {
	var why []string
	for _, err := range errs {
		if errors.Is(err, ErrNoEffect) {
			why = append(why, strings.Join(strings.Fields(err.Error()), " "))
		}
	}
	return strings.Join(why, "; ")
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
