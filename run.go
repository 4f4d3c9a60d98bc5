// Package locktorture wires one torture run: it brings up Redis, puts a lock
// under concurrent clients running a workload, records the history, checks it
// and writes the run's folder. The torture CLI is a thin shell around Run and
// Check, and a Go test can call them the same way.
package locktorture

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/nemesis"
	runreport "github.com/locktorture/locktorture/report"
	"github.com/locktorture/locktorture/workloads"
)

// Status is the live view of a run for a status line.
type Status struct {
	Elapsed   time.Duration
	Ops       int64
	OpsPerSec float64
	Acquired  int64
	Unknown   int64
	Crashes   int64
	// Anomalies counts the anomalies the checkers have confirmed so far
	// (the history is checked as it is recorded, a few TTLs behind).
	Anomalies int64
}

// Result is what a run produced.
type Result struct {
	RunID       string
	Dir         string // empty when OutDir was empty
	Verdict     checker.Verdict
	Report      *checker.Report
	Stats       Stats
	Interrupted bool
	// StoppedOnAnomaly: the run ended early at its first safety anomaly
	// (Options.StopOnAnomaly), or at the first Options.StopWhen accepted.
	StoppedOnAnomaly bool
}

// Stats summarise the operations of a run.
type Stats struct {
	Duration      time.Duration `json:"-"`
	DurationMs    int64         `json:"duration_ms"`
	Ops           int64         `json:"ops"`
	OpsPerSec     float64       `json:"ops_per_sec"`
	Acquired      int64         `json:"acquired"`
	AcquireFailed int64         `json:"acquire_failed"`
	Unknown       int64         `json:"unknown"`
	Crashes       int64         `json:"crashes"`
	// MasterSwitches counts the failovers the topology observed.
	MasterSwitches int64 `json:"master_switches,omitempty"`
	// Faults counts the fault starts: how many found a target, had to
	// wait for it, or gave up.
	Faults *FaultStats `json:"faults,omitempty"`
}

// Run performs one run. It returns an error for bad options (a *UsageError)
// or a harness failure; a lock that breaks is not an error but a verdict.
// Cancelling ctx ends the run early: what was recorded is still checked and
// written, and everything the run started is stopped before Run returns.
func Run(ctx context.Context, opts Options) (*Result, error) {
	opts.fill()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	pl, _ := opts.resolve() // Validate resolved them already
	if opts.RunID == "" {
		opts.RunID = fmt.Sprintf("%s-%s-seed%d", time.Now().Format("20060102-150405"), opts.Lock, opts.Seed)
	}
	opts.KeyPrefix = opts.keyPrefix()
	entry := pl.lock
	res := &Result{RunID: opts.RunID}

	var histOut io.Writer // nil: the history stays in memory only
	if opts.OutDir != "" {
		res.Dir = filepath.Join(opts.OutDir, opts.RunID)
		if err := os.MkdirAll(res.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("make run dir: %w", err)
		}
		f, err := os.Create(filepath.Join(res.Dir, "history.jsonl"))
		if err != nil {
			return nil, fmt.Errorf("create history: %w", err)
		}
		histOut = f
		defer f.Close()
	}

	// Faults are built before the servers start: some start them their own
	// way (nemesis.Preparer: under libfaketime, with AOF always).
	faults := nemesis.Build(pl.faults, opts.values())
	env, err := startEnv(ctx, opts, pl, faults)
	if err != nil {
		return nil, err
	}
	defer env.close()

	info := &history.RunInfo{ID: opts.RunID, Lock: opts.Lock, Workload: opts.Workload, Topology: opts.Topology,
		Clients: opts.Clients, Keys: opts.Keys, TTLMillis: opts.TTL.Milliseconds(), Seed: opts.Seed,
		Started: time.Now().UTC(), Params: opts.headerParams(pl.settings)}
	// The history is checked while it is recorded, and kept only on disk.
	stopCtx, stopOnAnomaly := context.WithCancel(ctx)
	defer stopOnAnomaly()
	var stopWhen func(checker.Anomaly) bool
	switch {
	case opts.StopWhen != nil:
		stopWhen = opts.StopWhen
	case opts.StopOnAnomaly:
		stopWhen = func(a checker.Anomaly) bool { return a.Severity == checker.SeveritySafety }
	}
	stopFn := func() { res.StoppedOnAnomaly = true; stopOnAnomaly() }
	live, err := newLiveCheck(context.WithoutCancel(ctx), res.Dir, opts.CheckTimeout, opts.Registries.Checkers, pl.checkers, stopWhen, stopFn)
	if err != nil {
		return nil, err
	}
	rec := history.NewRecorder(histOut, info, 100*time.Millisecond, history.KeepNone(), history.OnEvent(live.add))
	defer rec.Close()
	if o, ok := env.topo.(cluster.Observed); ok {
		o.Observe(func(e history.Event) { rec.Info(e) }) // master switches
	}

	watch := nemesis.NewWatch(aimWarmup)
	var steps func(workloads.StepEvent)
	if len(faults) > 0 {
		// Only a fault aims at protocol steps: a fault-free run spends
		// nothing on telling them.
		steps = observe(watch)
	}
	runner, err := workloads.NewRunner(workloads.Config{
		Clients: opts.Clients, Keys: opts.Keys, TTL: opts.TTL, Seed: opts.Seed,
		Lock: entry.New,
		LockConfig: locks.Config{TTL: opts.TTL, Wait: opts.Wait, RetryDelay: opts.RetryDelay,
			Addrs: env.lockAddrs(), CommandTimeout: opts.RedisTimeout, Settings: opts.values()},
		Connect:  env.connector(opts),
		Dial:     env.dialer,
		Recorder: rec,
		Logf:     opts.Logf,
		Observe:  steps,
	})
	if err != nil {
		return nil, usage("%v", err)
	}
	wl, err := pl.workload.New(runner, opts.shape())
	if err != nil {
		return nil, usage("%v", err)
	}
	sched := &nemesis.Schedule{Faults: faults, Interval: opts.NemesisInterval, Duration: opts.NemesisDuration,
		Warmup: opts.NemesisWarmup, Trigger: trigger(opts.NemesisTrigger), Seed: opts.Seed, Recorder: rec, Logf: opts.Logf}
	target := &nemesis.Target{Topology: env.topo, Network: env.net, Clients: clientSet{runner}, TTL: opts.TTL,
		Protocol: watch, Blind: opts.Target == TargetRandom}
	if err := sched.Check(target); err != nil {
		return nil, &UsageError{err}
	}

	runCtx, stop := context.WithTimeout(stopCtx, opts.Duration)
	progressDone := startProgress(runCtx, opts.Progress, runner, rec, live.anomalies)
	start := time.Now()
	schedDone := make(chan struct{})
	go func() { defer close(schedDone); sched.Run(runCtx, target) }()
	runner.Run(runCtx, wl, 2*opts.TTL+opts.Wait+5*time.Second)
	stop()
	<-schedDone
	<-progressDone
	elapsed := time.Since(start)
	res.Interrupted = ctx.Err() != nil
	if err := rec.Close(); err != nil {
		return nil, err
	}
	env.close()

	st := runner.Stats()
	res.Stats = Stats{Duration: elapsed, DurationMs: elapsed.Milliseconds(), Ops: st.Ops.Load(),
		Acquired: st.Acquired.Load(), AcquireFailed: st.AcquireFailed.Load(), Unknown: st.Unknown.Load(),
		Crashes: st.Crashes.Load()}
	if len(faults) > 0 {
		fs := sched.Stats()
		res.Stats.Faults = &fs
	}
	if elapsed > 0 {
		res.Stats.OpsPerSec = float64(res.Stats.Ops) / elapsed.Seconds()
	}

	report, err := live.finish(context.WithoutCancel(ctx), info)
	if err != nil {
		return nil, err
	}
	if live.operations() == 0 {
		// No evidence is never valid: a run whose clients never got an
		// operation recorded (no connection, interrupted at once) says nothing.
		return nil, fmt.Errorf("the run recorded no operation in %v (%w); see the harness messages", elapsed.Round(time.Millisecond), history.ErrNoOperations)
	}
	for _, e := range live.stream.Infos() {
		if e.Op == history.MasterSwitch {
			res.Stats.MasterSwitches++
		}
	}
	res.Report, res.Verdict = report, report.Gate(opts.FailOn)
	if res.Dir != "" {
		if err := writeSummary(filepath.Join(res.Dir, "summary.json"), info, res, live.stream.Faults()); err != nil {
			return nil, err
		}
		// The report reads the history back from the file.
		if _, err := runreport.Run(context.WithoutCancel(ctx), res.Dir); err != nil {
			return nil, fmt.Errorf("write report: %w", err)
		}
	}
	return res, nil
}

func retriesText(r *int) string {
	if r == nil {
		return "default"
	}
	return strconv.Itoa(*r)
}

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

// Summary is summary.json.
type Summary struct {
	RunID       string               `json:"run_id"`
	Run         *history.RunInfo     `json:"run"`
	Verdict     checker.Verdict      `json:"verdict"`
	Interrupted bool                 `json:"interrupted,omitempty"`
	Counts      map[checker.Kind]int `json:"counts"`
	Anomalies   []checker.Anomaly    `json:"anomalies"`
	Checkers    []checker.Result     `json:"checkers"`
	Stats       Stats                `json:"stats"`
	// Faults are the fault windows of the history, from the instant each
	// took effect to its heal.
	Faults []history.Window `json:"faults"`
}

func writeSummary(path string, info *history.RunInfo, res *Result, faults []history.Window) error {
	s := Summary{RunID: res.RunID, Run: info, Verdict: res.Verdict, Interrupted: res.Interrupted,
		Stats: res.Stats, Faults: faults}
	if s.Faults == nil {
		s.Faults = []history.Window{}
	}
	if r := res.Report; r != nil {
		s.Counts, s.Anomalies, s.Checkers = r.Count, r.Anomalies, r.Results
	}
	if s.Anomalies == nil {
		s.Anomalies = []checker.Anomaly{}
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}
