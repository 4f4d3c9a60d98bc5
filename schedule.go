package locktorture

import (
	"context"
	"time"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/summary"
	"github.com/locktorture/locktorture/workloads"
)

// scheduled is what stage 3 hands on: how the clients ran, counted, and
// whether the run was cut short.
type scheduled struct {
	stats       summary.Stats
	interrupted bool
}

// runSchedule is stage 3: the clients run for the duration (or until the
// live check stops them, or ctx ends) while the nemesis starts and heals its
// faults; then recording ends and the servers stop, so what follows reads a
// complete history.
func runSchedule(ctx context.Context, pl *plan, srv *servers, f *fleet) (*scheduled, error) {
	opts := pl.opts
	sched := &nemesis.Schedule{Faults: srv.faults, Interval: opts.NemesisInterval, Duration: opts.NemesisDuration,
		Warmup: opts.NemesisWarmup, Trigger: pl.trigger, Seed: opts.Seed, Recorder: f.rec, Logf: opts.Logf}
	target := &nemesis.Target{Topology: srv.topo, Network: srv.net, Clients: processGates{f.runner}, TTL: opts.TTL,
		Protocol: f.watch, Blind: opts.Target == TargetRandom}
	runCtx, stop := context.WithTimeout(f.stopCtx, opts.Duration)
	progressDone := startProgress(runCtx, opts.Progress, f.runner, f.rec, f.live.anomalies)
	defer func() { stop(); <-progressDone }()
	if err := sched.Check(target); err != nil {
		return nil, &UsageError{err}
	}

	// The clients' first processes start before the clock does, the
	// history's clock included.
	f.runner.Prepare()
	f.rec.StartClock()
	start := time.Now()
	schedDone := sched.Start(runCtx, target)
	f.runner.Run(runCtx, f.wl, 2*opts.TTL+opts.Wait+5*time.Second)
	stop()
	<-schedDone
	if err := f.runner.Err(); err != nil {
		return nil, err // a lock program broke its protocol: no verdict
	}
	elapsed := time.Since(start)
	if err := f.rec.Close(); err != nil {
		return nil, err
	}
	srv.close()

	st := f.runner.Stats()
	s := &scheduled{interrupted: ctx.Err() != nil, stats: summary.Stats{Duration: elapsed, DurationMs: elapsed.Milliseconds(),
		Ops: st.Ops.Load(), ResourceOps: st.ResourceOps.Load(), Acquired: st.Acquired.Load(),
		AcquireFailed: st.AcquireFailed.Load(), Unknown: st.Unknown.Load(), Crashes: st.Crashes.Load()}}
	if len(srv.faults) > 0 {
		fs := sched.Stats()
		s.stats.Faults = &fs
	}
	if elapsed > 0 {
		s.stats.OpsPerSec = float64(s.stats.Ops) / elapsed.Seconds()
	}
	return s, nil
}

// processGates let client faults reach the runner's live processes.
type processGates struct{ r *workloads.Runner }

func (g processGates) Count() int { return g.r.Clients() }

func (g processGates) Gate(i int) nemesis.Gate {
	p := g.r.Current(i)
	if p == nil {
		return nil
	}
	return p.Gate
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
