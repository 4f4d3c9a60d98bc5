// Package locktorture wires one torture run: it brings up Redis, puts a lock
// under concurrent clients running a workload, records the history, checks it
// and writes the run's folder. The torture CLI (package cli) is a thin shell
// around Run and Check, and a Go test can call them the same way.
//
// A run is five stages, each in the file that owns it:
//
//  1. start the backend and the network: the Redis topology on its backend,
//     and every client's fault proxies (env.go);
//  2. start the clients: the recorder with its live check, the lock's
//     clients and the workload they run (clients.go);
//  3. run the schedule: the clients run for the duration while the nemesis
//     starts and heals its faults (schedule.go);
//  4. check: the live check judges what the stream has not yet (live.go);
//  5. write: summary.json and report.html in the run folder (write.go).
//
// Options are read once before the first stage (options.go, settings.go).
package locktorture

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/summary"
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

// Stats summarise the operations of a run (summary.json "stats").
type Stats = summary.Stats

// FaultStats count what the run's fault starts found (summary.json "faults").
type FaultStats = summary.FaultStats

// run is one run going through its stages.
type run struct {
	opts Options
	plan plan
	res  *Result
	info *history.RunInfo
	hist *os.File // nil: the history stays in memory only

	env     *env
	clients *clients
}

// Run performs one run. It returns an error for bad options (a *UsageError)
// or a harness failure; a lock that breaks is not an error but a verdict.
// Cancelling ctx ends the run early: what was recorded is still checked and
// written, and everything the run started is stopped before Run returns.
func Run(ctx context.Context, opts Options) (*Result, error) {
	r, err := newRun(opts)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if r.env, err = startEnv(ctx, r.opts, r.plan); err != nil {
		return nil, err
	}
	if r.clients, err = startClients(ctx, r); err != nil {
		return nil, err
	}
	if err := r.runSchedule(ctx); err != nil {
		return nil, err
	}
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	if err := r.write(ctx); err != nil {
		return nil, err
	}
	return r.res, nil
}

// newRun reads the options once and opens the run folder.
func newRun(opts Options) (*run, error) {
	opts.fill()
	pl, err := opts.validate()
	if err != nil {
		return nil, err
	}
	if opts.RunID == "" {
		opts.RunID = fmt.Sprintf("%s-%s-seed%d", time.Now().Format("20060102-150405"), idPart(opts.Lock), opts.Seed)
	}
	opts.KeyPrefix = opts.keyPrefix()
	r := &run{opts: opts, plan: pl, res: &Result{RunID: opts.RunID}}
	r.info = &history.RunInfo{ID: opts.RunID, Lock: opts.Lock, Workload: opts.Workload, Topology: opts.Topology,
		Clients: opts.Clients, Keys: opts.Keys, TTLMillis: opts.TTL.Milliseconds(), Seed: opts.Seed,
		Started: time.Now().UTC(), Params: opts.headerParams(pl.settings), RenewsUnseen: pl.lock.RenewsUnseen}
	if opts.OutDir != "" {
		r.res.Dir = filepath.Join(opts.OutDir, opts.RunID)
		if err := os.MkdirAll(r.res.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("make run dir: %w", err)
		}
		f, err := os.Create(filepath.Join(r.res.Dir, "history.jsonl"))
		if err != nil {
			return nil, fmt.Errorf("create history: %w", err)
		}
		r.hist = f
	}
	return r, nil
}

// close stops whatever the stages started, in reverse; it is safe after any
// stage failed.
func (r *run) close() {
	if r.clients != nil {
		r.clients.close()
	}
	if r.env != nil {
		r.env.close()
	}
	if r.hist != nil {
		_ = r.hist.Close()
	}
}
