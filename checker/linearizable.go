package checker

import (
	"context"
	"time"

	"github.com/locktorture/locktorture/checker/model"
)

// The linearizability checker: its options and its registry's constructor
// here, its model and search in package checker/model. What is here turns
// the shared index into the model's input and its result into anomalies.

// LinearizableOptions configure the linearizability checker.
type LinearizableOptions struct {
	// Timeout bounds the whole search; when it runs out the verdict is
	// Unknown. Zero means 30 seconds.
	Timeout time.Duration
	// VisualizationPath is where porcupine's HTML rendering of the keys
	// that are not linearizable goes (their failing segment, with the
	// longest legal orders porcupine found). Empty: none is written.
	VisualizationPath string
	// SegmentOps is how many lock operations of a key one porcupine search
	// takes at most before the key is cut into segments (checker/model's
	// segments.go says why). Zero means 500.
	SegmentOps int
	// UnknownHorizon is how long after its client gave up (or after a fault
	// active meanwhile healed, whichever is later) an operation of unknown
	// outcome may take effect in the first, fast search. If that search
	// finds no legal order, searches without the bound decide. Zero means
	// the run's ttl (or the largest acquire ttl, or 1s).
	UnknownHorizon time.Duration
}

// DefaultLinearizableTimeout is the search's time budget when the options
// give none.
const DefaultLinearizableTimeout = model.DefaultTimeout

// expirySlack is how much earlier than its ttl Redis may expire a key (see
// model.ExpirySlack): the lease validity allows for it as the model does.
const expirySlack = model.ExpirySlack

// Linearizable returns the checker that asks porcupine whether the lock
// operations on each key can be ordered, each at an instant within its own
// call and return, so that an owner-aware lease mutex allows the order. It
// catches what the interval checks cannot: a release that deleted someone
// else's live lease, a refresh or release that found its own live key
// gone, an acquire granted while another lease was surely in force even if
// the victim never acted on the lock again. model.Check says how the
// search copes with operations of unknown outcome.
func Linearizable(o LinearizableOptions, opts ...Option) Checker {
	mo := model.Options(o)
	return newLockChecker("linearizable", opts, func(ctx context.Context, c *collector, ix *index) {
		report(c, model.Check(ctx, mo, modelInput(ix)))
	})
}

// modelInput is what the model reads of the index: the operations, each
// key's lock operations and its leases, the faults and the run's ttl.
func modelInput(ix *index) model.Input {
	in := model.Input{Ops: ix.ops, Faults: ix.faults, TTL: ix.ttl(), Keys: make([]model.Key, len(ix.keys))}
	for i, key := range ix.keys {
		k := ix.perKey[key]
		leases := make(map[string]model.Lease, len(k.byLease))
		for id, le := range k.byLease {
			leases[id] = model.Lease{Acquire: le.acquire, TTL: le.ttl}
		}
		in.Keys[i] = model.Key{Name: key, LockOps: k.lockOps, Leases: leases}
	}
	return in
}

// report records the model's result: its stats, its errors, and each key
// found not linearizable as a nonlinearizable anomaly.
func report(c *collector, r model.Result) {
	for _, s := range r.Stats {
		c.stat(s.Name, s.Value)
	}
	for _, e := range r.Errors {
		c.fail(e)
	}
	for _, f := range r.Findings {
		c.add(Anomaly{Kind: KindNonlinearizable, Keys: []string{f.Key}, StartNS: f.StartNS, EndNS: f.EndNS,
			Clients: f.Clients, Processes: f.Processes, Leases: f.Leases, Detail: f.Detail})
	}
}
