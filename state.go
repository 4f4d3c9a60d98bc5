package locktorture

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/summary"
)

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
	plan *plan
	res  *Result
	info *history.RunInfo
	hist *os.File // nil: the history stays in memory only

	env     *env
	clients *clients
}

// newRun starts the run of pl: its result, its history header, and its
// folder with the history file, when it has one.
func newRun(pl *plan) (*run, error) {
	opts := pl.opts
	r := &run{plan: pl, res: &Result{RunID: opts.RunID}}
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
