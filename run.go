// Package locktorture wires one torture run: it brings up Redis, puts a lock
// under concurrent clients running a workload, records the history, checks it
// and writes the run's folder. The torture CLI is a thin shell around Run and
// Check, and a Go test can call them the same way.
package locktorture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/workloads"
)

// Options describe one run. Zero values take the defaults of DefaultOptions.
type Options struct {
	Lock string
	// Locks is where Lock is looked up; default locks.Builtin(). Register
	// your own lock in it to put it under test.
	Locks    *locks.Registry
	Workload string

	Clients  int
	Keys     int
	Duration time.Duration
	TTL      time.Duration
	HoldMin  time.Duration
	HoldMax  time.Duration
	Overrun  float64
	Abandon  float64
	// Think is the pause between a release and the client's next acquire.
	Think time.Duration
	// Wait bounds each acquire's own retrying; default the TTL.
	Wait       time.Duration
	RetryDelay time.Duration
	Seed       int64

	// RedisRetries is go-redis's MaxRetries; nil keeps the library default
	// (3), since that is what users run. -1 disables retries.
	RedisRetries *int
	// RedisTimeout sets go-redis's dial/read/write timeouts; 0 keeps its defaults.
	RedisTimeout time.Duration
	RedisServer  string

	// Topology is "single" (default) or another of cluster.Topologies.
	Topology string
	// Nodes is the number of masters of a multi-master topology.
	Nodes int
	// Persistence of every redis-server (off, everysec, always).
	Persistence cluster.Persistence
	// Toxiproxy is the API URL of an external toxiproxy-server; empty runs
	// one embedded in this process.
	Toxiproxy string

	// Nemesis is a comma-separated list of faults (see nemesis.Entries).
	Nemesis         string
	NemesisInterval time.Duration
	// NemesisDuration is how long each fault stays active; default the interval.
	NemesisDuration time.Duration
	NemesisOptions  nemesis.Options

	// OutDir receives the run folder OutDir/<RunID>/; empty writes nothing.
	OutDir string
	RunID  string

	// CheckTimeout bounds the linearizability check; past it the verdict is unknown.
	CheckTimeout time.Duration
	// Progress, when set, is called about once a second while the run goes on.
	Progress func(Status)
	// Logf receives harness messages; default discards them.
	Logf func(format string, args ...any)
}

// DefaultOptions are the seed's numbers: a 3 s TTL, work well under it.
func DefaultOptions() Options {
	return Options{
		Lock: "token", Workload: "mutex", Topology: "single", NemesisInterval: 2 * time.Second, Clients: 4, Keys: 1, Duration: 10 * time.Second,
		TTL: 3 * time.Second, HoldMin: 10 * time.Millisecond, HoldMax: 100 * time.Millisecond,
		CheckTimeout: time.Minute, OutDir: "results",
	}
}

// Status is the live view of a run for a status line.
type Status struct {
	Elapsed   time.Duration
	Ops       int64
	OpsPerSec float64
	Acquired  int64
	Unknown   int64
	Crashes   int64
	// Anomalies counts overlapping holders and lost updates seen so far;
	// the checkers' count at the end is the one that matters.
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
}

// UsageError marks a problem with the options rather than with the harness.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usage(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func (o *Options) fill() error {
	d := DefaultOptions()
	if o.Lock == "" {
		o.Lock = d.Lock
	}
	if o.Locks == nil {
		o.Locks = locks.Builtin()
	}
	if o.Topology == "" {
		o.Topology = d.Topology
	}
	if o.NemesisInterval == 0 {
		o.NemesisInterval = d.NemesisInterval
	}
	if o.NemesisOptions.Persistence == "" {
		o.NemesisOptions.Persistence = o.Persistence
	}
	if o.Workload == "" {
		o.Workload = d.Workload
	}
	if o.Clients == 0 {
		o.Clients = d.Clients
	}
	if o.Keys == 0 {
		o.Keys = d.Keys
	}
	if o.Duration == 0 {
		o.Duration = d.Duration
	}
	if o.TTL == 0 {
		o.TTL = d.TTL
	}
	if o.Wait == 0 {
		o.Wait = o.TTL
	}
	if o.CheckTimeout == 0 {
		o.CheckTimeout = d.CheckTimeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	switch {
	case o.Clients < 0 || o.Clients > 10000:
		return usage("--clients %d: want 1..10000", o.Clients)
	case o.Keys < 0 || o.Keys > 100000:
		return usage("--keys %d: want 1..100000", o.Keys)
	case o.Duration < 0:
		return usage("--duration %v: must be positive", o.Duration)
	case o.TTL < time.Millisecond:
		return usage("--ttl %v: must be at least 1ms", o.TTL)
	case o.HoldMin < 0 || o.HoldMax < o.HoldMin:
		return usage("--hold %v..%v: want 0 <= MIN <= MAX", o.HoldMin, o.HoldMax)
	case o.Overrun < 0 || o.Overrun > 1:
		return usage("--overrun %v: want a probability in [0,1]", o.Overrun)
	case o.Abandon < 0 || o.Abandon > 1:
		return usage("--abandon %v: want a probability in [0,1]", o.Abandon)
	case o.Wait < 0 || o.RetryDelay < 0 || o.Think < 0:
		return usage("--wait, --retry-delay and --think must not be negative")
	case o.NemesisInterval < 0 || o.NemesisDuration < 0:
		return usage("--nemesis-interval and --nemesis-duration must be positive")
	case o.Nodes < 0 || o.Nodes > 15:
		return usage("--nodes %d: want 1..15", o.Nodes)
	case o.RunID != "" && !runIDPattern.MatchString(o.RunID):
		return usage("run id %q: use letters, digits, '.', '_' and '-'", o.RunID)
	}
	if _, ok := workloadSpecs()[o.Workload]; !ok {
		return usage("unknown workload %q (known: %v)", o.Workload, WorkloadNames())
	}
	if _, err := o.Locks.Get(o.Lock); err != nil {
		return &UsageError{err}
	}
	if _, ok := cluster.Topologies()[o.Topology]; !ok {
		return usage("unknown topology %q (known: %v)", o.Topology, cluster.TopologyNames())
	}
	if _, err := cluster.ParsePersistence(string(o.Persistence)); err != nil {
		return &UsageError{err}
	}
	if _, err := nemesis.New(o.Nemesis, o.NemesisOptions); err != nil {
		return &UsageError{err}
	}
	if o.RunID == "" {
		o.RunID = fmt.Sprintf("%s-%s-seed%d", time.Now().Format("20060102-150405"), o.Lock, o.Seed)
	}
	return nil
}

// Run performs one run. It returns an error for bad options (a *UsageError)
// or a harness failure; a lock that breaks is not an error but a verdict.
// Cancelling ctx ends the run early: what was recorded is still checked and
// written, and everything the run started is stopped before Run returns.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	entry, _ := opts.Locks.Get(opts.Lock)
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
	faults, _ := nemesis.New(opts.Nemesis, opts.NemesisOptions)
	env, err := startEnv(ctx, opts, entry, faults)
	if err != nil {
		return nil, err
	}
	defer env.close()

	info := &history.RunInfo{ID: opts.RunID, Lock: opts.Lock, Workload: opts.Workload, Topology: opts.Topology,
		Clients: opts.Clients, Keys: opts.Keys, TTLMillis: opts.TTL.Milliseconds(), Seed: opts.Seed,
		Started: time.Now().UTC(), Params: map[string]string{
			"hold": opts.HoldMin.String() + ".." + opts.HoldMax.String(), "overrun": fmt.Sprint(opts.Overrun),
			"abandon": fmt.Sprint(opts.Abandon), "think": opts.Think.String(), "wait": opts.Wait.String(), "duration": opts.Duration.String(),
			"redis_retries": retriesText(opts.RedisRetries), "nemesis": opts.Nemesis,
			"nemesis_interval": opts.NemesisInterval.String(), "persistence": string(opts.Persistence),
		}}
	rec := history.NewRecorder(histOut, info, 100*time.Millisecond)
	defer rec.Close()
	if o, ok := env.topo.(cluster.Observed); ok {
		o.Observe(func(e history.Event) { rec.Info(e) }) // master switches
	}

	runner, err := workloads.NewRunner(workloads.Config{
		Clients: opts.Clients, Keys: opts.Keys, TTL: opts.TTL, Seed: opts.Seed,
		Lock:       entry.New,
		LockConfig: locks.Config{TTL: opts.TTL, Wait: opts.Wait, RetryDelay: opts.RetryDelay},
		Connect:    env.connector(opts),
		Recorder:   rec,
		Logf:       opts.Logf,
	})
	if err != nil {
		return nil, usage("%v", err)
	}
	wl, err := workloadSpecs()[opts.Workload].New(runner, opts)
	if err != nil {
		return nil, usage("%v", err)
	}
	sched := &nemesis.Schedule{Faults: faults, Interval: opts.NemesisInterval, Duration: opts.NemesisDuration,
		Seed: opts.Seed, Recorder: rec, Logf: opts.Logf}
	target := &nemesis.Target{Topology: env.topo, Network: env.net, Clients: clientSet{runner}, TTL: opts.TTL}
	if err := sched.Check(target); err != nil {
		return nil, &UsageError{err}
	}

	runCtx, stop := context.WithTimeout(ctx, opts.Duration)
	progressDone := startProgress(runCtx, opts.Progress, runner, rec)
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
	if elapsed > 0 {
		res.Stats.OpsPerSec = float64(res.Stats.Ops) / elapsed.Seconds()
	}

	h, err := history.FromEvents(rec.Events())
	if err != nil {
		return nil, fmt.Errorf("recorded history is invalid (a harness bug): %w", err)
	}
	for _, e := range h.Infos() {
		if e.Op == history.MasterSwitch {
			res.Stats.MasterSwitches++
		}
	}
	report := checkHistory(context.WithoutCancel(ctx), h, res.Dir, opts.CheckTimeout)
	res.Report, res.Verdict = report, report.Verdict
	if res.Dir != "" {
		if err := writeSummary(filepath.Join(res.Dir, "summary.json"), info, res); err != nil {
			return nil, err
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

func startProgress(ctx context.Context, fn func(Status), r *workloads.Runner, rec *history.Recorder) <-chan struct{} {
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
				Crashes: st.Crashes.Load(), Anomalies: st.Overlaps.Load()}
			if el > 0 {
				s.OpsPerSec = float64(s.Ops) / el.Seconds()
			}
			fn(s)
		}
	}()
	return done
}

// Check re-checks a saved history (a history.jsonl, or a run folder holding
// one) without Redis. A malformed file is a *UsageError.
func Check(ctx context.Context, path string, timeout time.Duration) (*checker.Report, *history.History, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, usage("%v", err)
	}
	dir := filepath.Dir(path)
	if st.IsDir() {
		dir = path
		path = filepath.Join(path, "history.jsonl")
	}
	h, err := history.Load(path)
	if err != nil {
		return nil, nil, &UsageError{err}
	}
	if timeout == 0 {
		timeout = DefaultOptions().CheckTimeout
	}
	return checkHistory(ctx, h, dir, timeout), h, nil
}

func checkHistory(ctx context.Context, h *history.History, dir string, timeout time.Duration) *checker.Report {
	vis := ""
	if dir != "" {
		vis = filepath.Join(dir, "linearizability.html")
	}
	workload := "mutex"
	if h.Run != nil && h.Run.Workload != "" {
		workload = h.Run.Workload
	}
	rep := checkersFor(workload, checker.LinearizableOptions{Timeout: timeout, VisualizationPath: vis}).Report(ctx, h)
	checker.MarkAfterSwitch(h, &rep, 0) // anomalies that followed a failover
	return &rep
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
	Faults      []history.Window     `json:"faults,omitempty"`
}

func writeSummary(path string, info *history.RunInfo, res *Result) error {
	s := Summary{RunID: res.RunID, Run: info, Verdict: res.Verdict, Interrupted: res.Interrupted,
		Stats: res.Stats}
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

// IsUsage reports whether err is the caller's mistake (exit code 2 in the CLI,
// like every other error, but worded for the user).
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}
