package workloads

import (
	"time"

	"github.com/locktorture/locktorture/locks"
)

// StepKind says which protocol step a StepEvent reports.
type StepKind string

// The protocol steps a Runner reports to its Config.Observe.
const (
	// StepAcquiring: an acquire was invoked; its first command is not sent yet.
	StepAcquiring StepKind = "acquiring"
	// StepAcquired: an acquire returned ok and was recorded; the hold has
	// not begun yet.
	StepAcquired StepKind = "acquired"
	// StepReleasing: a release was invoked; its command is not sent yet.
	StepReleasing StepKind = "releasing"
	// StepPoint: the process reached a named point of its protocol (a
	// Gate step: attempt, between-setnx-and-pexpire, hold, release...).
	StepPoint StepKind = "point"
)

// StepEvent is one protocol step of a client process, reported while the
// process stands at it: the observer runs in the process's own goroutine,
// before the process goes on, so a fault aimed at exactly this step (a
// pause right after an acquire, a crash between SETNX and PEXPIRE) lands
// on it and not on whatever the process does a moment later.
type StepEvent struct {
	Kind    StepKind
	Client  int
	Process int
	// Point names the protocol point of a StepPoint event.
	Point string
	// Key and Lease of an acquire or release (Lease: the token of an ok
	// acquire or of the lease being released).
	Key, Lease string
	// TTL of the lease, and Expires: on StepAcquired, the latest instant
	// the lease can still live in Redis (the acquire's return plus TTL;
	// zero for a key written without expiry).
	TTL     time.Duration
	Expires time.Time
	// Gate is the process's gate, to pause or kill it at this step.
	Gate *Gate
}

// observe reports a step of p to the run's observer, if any.
func (p *Process) observe(e StepEvent) {
	fn := p.r.cfg.Observe
	if fn == nil {
		return
	}
	e.Client, e.Process, e.Gate = p.Client, p.ID(), p.Gate
	fn(e)
}

// observeAcquired reports an ok acquire of lease.
func (p *Process) observeAcquired(key string, lease *locks.Lease) {
	e := StepEvent{Kind: StepAcquired, Key: key, Lease: lease.Token, TTL: lease.TTL}
	if lease.TTL > 0 { // 0: a key that never expires
		e.Expires = time.Now().Add(lease.TTL)
	}
	p.observe(e)
}
