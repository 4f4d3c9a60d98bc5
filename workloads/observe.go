package workloads

import (
	"time"

	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/nemesis"
)

// A process reports each protocol step to the run's observer as a
// nemesis.ProtocolEvent, while the process stands at it: the observer runs in
// the process's own goroutine, before the process goes on, so a fault aimed
// at exactly this step (a pause right after an acquire, a crash between SETNX
// and PEXPIRE) lands on it and not on whatever the process does a moment
// later. The nemesis numbers the events (ProtocolEvent.N) and stamps them.

// observe reports a step of p to the run's observer, if any.
func (p *Process) observe(e nemesis.ProtocolEvent) {
	fn := p.r.cfg.Observe
	if fn == nil {
		return
	}
	e.Client, e.Process, e.Gate = p.Client, p.ID(), p.Gate
	fn(e)
}

// stored is the key lease holds in Redis, as its lock names it: the
// faults read the lease on the servers under it.
func (p *Process) stored(lease *locks.Lease) string {
	if lease.Stored != "" {
		return lease.Stored
	}
	return locks.StoredKey(p.Lock, lease.Key)
}

// observeAcquired reports an ok acquire of lease, whose holder means to
// work for hold before it releases (0: unsaid).
func (p *Process) observeAcquired(key string, lease *locks.Lease, hold time.Duration) {
	e := nemesis.ProtocolEvent{Kind: nemesis.Acquired, Key: key, Stored: p.stored(lease), Lease: lease.Token, TTL: lease.TTL, Hold: hold}
	if lease.TTL > 0 { // 0: a key that never expires
		e.Expires = time.Now().Add(lease.TTL)
	}
	p.observe(e)
}

// observeReleasing reports that p is about to send the release of lease;
// observeReleased, that it returned: from then on the faults count its key
// free.
func (p *Process) observeReleasing(lease *locks.Lease) {
	p.observe(nemesis.ProtocolEvent{Kind: nemesis.Releasing, Key: lease.Key, Stored: p.stored(lease), Lease: lease.Token, TTL: lease.TTL})
}

func (p *Process) observeReleased(lease *locks.Lease) {
	p.observe(nemesis.ProtocolEvent{Kind: nemesis.Released, Key: lease.Key, Stored: p.stored(lease), Lease: lease.Token, TTL: lease.TTL})
}
