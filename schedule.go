package locktorture

import (
	"context"
	"time"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/workloads"
)

// runSchedule is stage 3: the clients run for the duration (or until the
// live check stops them, or ctx ends) while the nemesis starts and heals its
// faults; then recording ends and the servers stop, so what follows reads a
// complete history.
func (r *run) runSchedule(ctx context.Context) error {
	opts, c := r.plan.opts, r.clients
	sched := &nemesis.Schedule{Faults: r.env.faults, Interval: opts.NemesisInterval, Duration: opts.NemesisDuration,
		Warmup: opts.NemesisWarmup, Trigger: trigger(opts.NemesisTrigger), Seed: opts.Seed, Recorder: c.rec, Logf: opts.Logf}
	target := &nemesis.Target{Topology: r.env.topo, Network: r.env.net, Clients: clientSet{c.runner}, TTL: opts.TTL,
		Protocol: c.watch, Blind: opts.Target == TargetRandom}
	if err := sched.Check(target); err != nil {
		return &UsageError{err}
	}

	// The clients' first processes start before the clock does, the
	// history's clock included.
	c.runner.Prepare()
	c.rec.StartClock()
	runCtx, stop := context.WithTimeout(c.stopCtx, opts.Duration)
	progressDone := startProgress(runCtx, opts.Progress, c.runner, c.rec, c.live.anomalies)
	start := time.Now()
	schedDone := make(chan struct{})
	go func() { defer close(schedDone); sched.Run(runCtx, target) }()
	awaitAimedFault(runCtx, sched, target, c.watch)
	c.runner.Run(runCtx, c.wl, 2*opts.TTL+opts.Wait+5*time.Second)
	stop()
	<-schedDone
	<-progressDone
	if err := c.runner.Err(); err != nil {
		return err // a lock program broke its protocol: no verdict
	}
	elapsed := time.Since(start)
	r.res.Interrupted = ctx.Err() != nil
	if err := c.rec.Close(); err != nil {
		return err
	}
	r.env.close()

	st := c.runner.Stats()
	r.res.Stats = Stats{Duration: elapsed, DurationMs: elapsed.Milliseconds(), Ops: st.Ops.Load(), ResourceOps: st.ResourceOps.Load(),
		Acquired: st.Acquired.Load(), AcquireFailed: st.AcquireFailed.Load(), Unknown: st.Unknown.Load(),
		Crashes: st.Crashes.Load()}
	if len(r.env.faults) > 0 {
		fs := sched.Stats()
		r.res.Stats.Faults = &fs
	}
	if elapsed > 0 {
		r.res.Stats.OpsPerSec = float64(r.res.Stats.Ops) / elapsed.Seconds()
	}
	return nil
}

// startProgress calls fn about once a second with the run's live status.
func startProgress(ctx context.Context, fn func(Status), r *workloads.Runner, rec *history.Recorder, anomalies func() int64) <-chan struct{} {
	done := make(chan struct{})
	if fn == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			st := r.Stats()
			el := rec.Now()
			s := Status{Elapsed: el, Ops: st.Ops.Load(), Acquired: st.Acquired.Load(), Unknown: st.Unknown.Load(),
				Crashes: st.Crashes.Load(), Anomalies: anomalies()}
			if el > 0 {
				s.OpsPerSec = float64(s.Ops) / el.Seconds()
			}
			fn(s)
		}
	}()
	return done
}

// firstAimWait bounds how long the clients wait for the first aimed fault
// to begin waiting for its step: a Start that reads the topology first
// takes a few milliseconds.
const firstAimWait = 200 * time.Millisecond

// awaitAimedFault returns once the first fault, if it aims at the
// protocol, waits for its step (or after firstAimWait). Started together,
// the clients' first attempts come within milliseconds, before a fault
// that reads the topology first is ready for them; and with long holds
// the next attempt on a free key may be seconds later.
func awaitAimedFault(ctx context.Context, s *nemesis.Schedule, t *nemesis.Target, w *nemesis.Watch) {
	if !s.FirstAims(t) {
		return
	}
	deadline := time.Now().Add(firstAimWait)
	for !w.Waiting() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
}
