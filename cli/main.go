// Package cli is the torture command: it parses flags and prints, and
// package locktorture does the work. Its Main takes the registries the
// command draws on, so a team's own main, with its locks, faults, workloads
// and checkers registered beside the built-ins, gets every subcommand
// (run, check, report, matrix, list, clean) for them:
//
//	func main() {
//		regs := locktorture.Builtin()
//		_ = regs.Locks.Register(mylock.Entry)
//		cli.Main(regs)
//	}
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/registry"
)

// Exit codes, as the README documents them: 0 valid (or as expected), 1 a
// violation or not as expected, 2 bad input or a harness error.
const (
	exitValid   = 0
	exitInvalid = 1
	exitUsage   = 2
)

// Main runs the command line of the process with regs and exits with its
// code.
func Main(regs locktorture.Registries) {
	// go-redis logs every Sentinel master change of every client to stderr;
	// the history records the switches, so its chatter only hides the
	// status line.
	redis.SetLogger(quiet{})
	os.Exit(Run(os.Args[1:], os.Stdout, os.Stderr, regs))
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

const usageText = `usage:
  torture run   --lock NAME [flags]     put a lock under concurrent clients and check the history
  torture check RUN_DIR|HISTORY [flags] re-check a saved history without Redis
  torture report RUN_DIR|RESULTS_DIR    write report.html of a run, or index.html of a results folder
  torture matrix SPEC.yaml [--seeds A..B] [--out DIR] [--cells FILTER]
                                        run a spec of locks x faults x seeds against its expectations
  torture list                          list the locks
  torture clean [--all]                 remove the containers, networks, processes and temp dirs killed runs left
Run 'torture run -h' for the flags of a run.`

// Run runs one command line (args without the program name) against regs
// and returns its exit code: 0 valid or as expected, 1 a violation or not as
// expected, 2 bad input or a harness error.
func Run(args []string, stdout, stderr io.Writer, regs locktorture.Registries) int {
	regs.Fill()
	if len(args) == 0 {
		fmt.Fprintln(stderr, usageText)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stdout, stderr, regs)
	case "check":
		return cmdCheck(args[1:], stdout, stderr, regs)
	case "report":
		return cmdReport(args[1:], stdout, stderr)
	case "matrix":
		return cmdMatrix(args[1:], stdout, stderr, regs)
	case "list":
		return cmdList(args[1:], stdout, stderr, regs)
	case "clean":
		return cmdClean(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usageText)
		return exitValid
	}
	fmt.Fprintf(stderr, "torture: unknown command %q (want run, check, report, matrix, list or clean)\n", args[0])
	return exitUsage
}

func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "torture: %s\n", oneLine(err.Error()))
	return exitUsage
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// newFlags returns a flag set whose errors come back to us, one line each.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse runs fs.Parse and turns -h into printed help.
func parse(fs *flag.FlagSet, args []string, stdout io.Writer) (help bool, err error) {
	err = fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return true, nil
	}
	if err == nil && fs.NArg() > 0 {
		return false, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return false, err
}

// parseOne parses flags given before or after one positional argument, the
// path a check, report or matrix works on; want names it in the error.
func parseOne(fs *flag.FlagSet, args []string, stdout io.Writer, want string) (path string, help bool, err error) {
	var paths []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "usage: torture %s [flags] %s\n", fs.Name(), want)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return "", true, nil
		}
		if err != nil {
			return "", false, err
		}
		if fs.NArg() == 0 {
			break
		}
		paths = append(paths, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(paths) != 1 {
		return "", false, fmt.Errorf("want exactly one %s", want)
	}
	return paths[0], false, nil
}

// holdRange is a --hold MIN..MAX flag (or a single duration).
type holdRange struct{ min, max time.Duration }

func (h *holdRange) String() string { return h.min.String() + ".." + h.max.String() }

func (h *holdRange) Set(s string) error {
	lo, hi, found := strings.Cut(s, "..")
	if !found {
		hi = lo
	}
	a, err := time.ParseDuration(lo)
	if err != nil {
		return fmt.Errorf("want MIN..MAX durations like 10ms..100ms")
	}
	b, err := time.ParseDuration(hi)
	if err != nil {
		return fmt.Errorf("want MIN..MAX durations like 10ms..100ms")
	}
	h.min, h.max = a, b
	return nil
}

// optionalInt is an int flag that remembers whether it was set.
type optionalInt struct{ v *int }

func (o *optionalInt) String() string {
	if o.v == nil {
		return "library default"
	}
	return fmt.Sprint(*o.v)
}

func (o *optionalInt) Set(s string) error {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil || n < -1 {
		return fmt.Errorf("want an integer >= -1")
	}
	o.v = &n
	return nil
}

type persistenceFlag struct{ v cluster.Persistence }

func (p *persistenceFlag) String() string { return string(p.v) }

func (p *persistenceFlag) Set(s string) error {
	v, err := cluster.ParsePersistence(s)
	if err != nil {
		return fmt.Errorf("want off, everysec or always")
	}
	p.v = v
	return nil
}

type expectFlag struct{ v checker.Verdict }

func (e *expectFlag) String() string { return string(e.v) }

func (e *expectFlag) Set(s string) error {
	switch checker.Verdict(s) {
	case checker.Valid, checker.Invalid:
		e.v = checker.Verdict(s)
		return nil
	}
	return fmt.Errorf("want valid or invalid")
}

// failOnFlag is --fail-on: which anomalies fail the gate.
type failOnFlag checker.FailOn

func (f *failOnFlag) String() string { return string(*f) }

func (f *failOnFlag) Set(s string) error {
	v, err := checker.ParseFailOn(s)
	if err != nil {
		return errors.New("want safety or all")
	}
	*f = failOnFlag(v)
	return nil
}

const failOnUsage = "which anomalies fail: all, or safety (liveness anomalies are reported only)"

func cmdRun(args []string, stdout, stderr io.Writer, regs locktorture.Registries) int {
	d := locktorture.DefaultOptions()
	opts := d
	hold := holdRange{d.HoldMin, d.HoldMax}
	var retries optionalInt
	var expect expectFlag
	var quiet bool
	var persistence persistenceFlag
	seed := time.Now().UnixNano() % 1_000_000
	fs := newFlags("run", stderr)
	fs.StringVar(&opts.Lock, "lock", d.Lock, "lock under test (see 'torture list')")
	var faults, checks, trig string
	fs.StringVar(&opts.Workload, "workload", d.Workload, "what clients do: "+strings.Join(regs.Workloads.Names(), ", "))
	fs.IntVar(&opts.Clients, "clients", d.Clients, "concurrent clients")
	fs.IntVar(&opts.Keys, "keys", d.Keys, "lock keys the clients contend for")
	fs.DurationVar(&opts.Duration, "duration", d.Duration, "how long clients run")
	fs.DurationVar(&opts.TTL, "ttl", d.TTL, "lock TTL")
	fs.Var(&hold, "hold", "work time inside the lock, MIN..MAX")
	fs.Float64Var(&opts.Overrun, "overrun", 0, "probability that a hold outlasts the TTL (7/6 of it)")
	fs.Float64Var(&opts.Abandon, "abandon", 0, "probability that a holder dies without releasing")
	fs.DurationVar(&opts.Think, "think", 0, "pause between a release and the next acquire")
	fs.DurationVar(&opts.Wait, "wait", 0, "how long one acquire retries before giving up (default: the TTL)")
	fs.DurationVar(&opts.RetryDelay, "retry-delay", 0, "pause between acquire attempts (default: a backoff from 1ms up to TTL/20)")
	fs.Int64Var(&seed, "seed", seed, "seed for every random choice of the run (default: random, printed)")
	fs.Var(&retries, "redis-retries", "go-redis MaxRetries (-1: none; default: the library's)")
	fs.DurationVar(&opts.RedisTimeout, "redis-timeout", 0, "go-redis dial/read/write timeout (default: the library's)")
	fs.StringVar(&opts.OutDir, "out", d.OutDir, "directory that receives the run folder")
	fs.StringVar(&opts.RunID, "run-id", "", "name of the run folder (default: time, lock and seed)")
	fs.DurationVar(&opts.CheckTimeout, "check-timeout", d.CheckTimeout, "time limit of the linearizability check")
	fs.StringVar(&opts.Topology, "topology", d.Topology, "redis deployment: "+strings.Join(regs.Topologies.Names(), ", "))
	fs.IntVar(&opts.Nodes, "nodes", 0, "masters of a multi-master topology (redlock: default 5)")
	fs.Var(&persistence, "persistence", "redis persistence: off, everysec or always (AOF fsync)")
	fs.StringVar(&opts.Toxiproxy, "toxiproxy", "", "API URL of an external toxiproxy-server (default: embedded)")
	var redisAddrs, sentinelAddrs string
	fs.StringVar(&opts.Backend, "backend", "local", "where the servers run: local (processes), docker (containers), external (your own: --redis or --sentinel)")
	fs.StringVar(&redisAddrs, "redis", "", "--backend external: your servers, host:port,... (one for single, N for redlock)")
	fs.StringVar(&sentinelAddrs, "sentinel", "", "--backend external --topology sentinel: your Sentinels, host:port,...")
	fs.StringVar(&opts.SentinelMaster, "sentinel-master", "mymaster", "the master's name your Sentinels monitor")
	fs.StringVar(&opts.KeyPrefix, "key-prefix", "", "prefix of every key of the run (--backend external default: locktorture:RUN_ID:)")
	fs.StringVar(&faults, "nemesis", "", "comma-separated faults to inject (see 'torture list')")
	fs.StringVar(&checks, "checkers", "", "comma-separated checkers to run beyond the lock's and the workload's (see 'torture list')")
	fs.DurationVar(&opts.NemesisInterval, "nemesis-interval", d.NemesisInterval, "mean quiet time between faults")
	fs.DurationVar(&opts.NemesisDuration, "nemesis-duration", 0, "mean time a fault stays active (default: the interval)")
	fs.DurationVar(&opts.NemesisOptions.Latency, "latency", 0, "latency fault delay (default: 1.25 x TTL)")
	fs.DurationVar(&opts.NemesisOptions.Jitter, "jitter", 0, "latency fault jitter (default: 5% of the latency)")
	fs.BoolVar(&opts.NemesisOptions.LatencyAll, "latency-all", false, "latency fault delays every client, not one")
	fs.StringVar(&opts.NemesisOptions.Direction, "direction", "", "network faults: up, down or both (default per fault)")
	fs.Float64Var(&opts.NemesisOptions.LostReplyRate, "lost-reply-rate", 0, "share of the time lost-reply drops replies, in 20ms bursts (default 0.2)")
	fs.DurationVar(&opts.NemesisOptions.Downtime, "downtime", 0, "how long crash-redis keeps a node down before restarting it")
	fs.StringVar(&opts.NemesisOptions.PartitionClients, "partition-clients", "", "partition-minority/-majority cut one or all clients (default: seeded choice)")
	fs.DurationVar(&opts.NemesisOptions.ClockJump, "clock-jump", 0, "how far clock-jump moves a node's clock forward (default: 2 x TTL)")
	fs.StringVar(&opts.Target, "target", locktorture.TargetProtocol, "what faults aim at: protocol (the client that just acquired, the node holding a live lease) or random")
	fs.StringVar(&trig, "trigger", "time", "start faults that do not aim themselves on: time, acquire (the next ok acquire) or release (the next release sent)")
	fs.DurationVar(&opts.NemesisWarmup, "warmup", 0, "quiet time before the first time-driven fault (default: the interval)")
	fs.Var(&expect, "expect", "gate mode: exit 0 only if the verdict is this (valid or invalid)")
	fs.Var((*failOnFlag)(&opts.FailOn), "fail-on", failOnUsage)
	fs.BoolVar(&quiet, "quiet", false, "no live status line")
	fs.BoolVar(&opts.StopOnAnomaly, "stop-on-anomaly", false, "end the run at the first safety anomaly (faults are still healed, everything written)")
	if help, err := parse(fs, args, stdout); help {
		return exitValid
	} else if err != nil {
		return fail(stderr, fmt.Errorf("run: %v", err))
	}
	opts.Seed = seed
	opts.HoldMin, opts.HoldMax = hold.min, hold.max
	opts.RedisRetries = retries.v
	opts.Persistence = persistence.v
	opts.Faults, opts.Checkers = locktorture.ParseList(faults), locktorture.ParseList(checks)
	opts.NemesisTrigger = nemesis.Trigger(trig)
	opts.Redis, opts.Sentinels = locktorture.ParseList(redisAddrs), locktorture.ParseList(sentinelAddrs)
	opts.Registries = regs
	// The flags start from the defaults, so a zero here was typed: the
	// library judges it as given.
	if err := opts.Validate(); err != nil {
		return fail(stderr, fmt.Errorf("run: %v", err))
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	go func() {
		// After the first signal the run winds down (heals faults, stops
		// every process, writes what it recorded); a second one kills at once.
		<-ctx.Done()
		cancel()
	}()
	tty := !quiet && isTerminal(stderr)
	if tty {
		opts.Progress = func(s locktorture.Status) {
			fmt.Fprintf(stderr, "\r\033[K%6.1fs  %8.0f ops/s  %7d acquires  %4d anomalies so far",
				s.Elapsed.Seconds(), s.OpsPerSec, s.Acquired, s.Anomalies)
		}
	}
	opts.Logf = func(format string, args ...any) {
		if tty {
			fmt.Fprint(stderr, "\r\033[K")
		}
		fmt.Fprintf(stderr, "torture: "+format+"\n", args...)
	}
	fmt.Fprintf(stdout, "torture: %s on %s, %d clients, %d keys, ttl %v, hold %v, %v, seed %d\n",
		opts.Lock, opts.Topology, opts.Clients, opts.Keys, opts.TTL, hold.String(), opts.Duration, seed)
	if len(opts.Faults) > 0 {
		fmt.Fprintf(stdout, "nemesis: %s every ~%v\n", strings.Join(opts.Faults, ", "), opts.NemesisInterval)
	}
	limitMemory()
	res, err := locktorture.Run(ctx, opts)
	if tty {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintf(stdout, "%d ops in %.1fs (%.0f ops/s): %d acquired, %d failed, %d unknown, %d crashes\n",
		res.Stats.Ops, res.Stats.Duration.Seconds(), res.Stats.OpsPerSec, res.Stats.Acquired,
		res.Stats.AcquireFailed, res.Stats.Unknown, res.Stats.Crashes)
	if f := res.Stats.Faults; f != nil {
		fmt.Fprintf(stdout, "faults: %d started, %d found a target (%d after waiting, %d past the planned step), %d gave up\n",
			f.Started, f.Aimed, f.Waited, f.Late, f.GaveUp)
	}
	details := ""
	if res.Dir != "" {
		details = "summary.json"
	}
	printReport(stdout, res.Report, details)
	if res.Dir != "" {
		fmt.Fprintf(stdout, "run folder: %s\n", res.Dir)
	}
	if res.StoppedOnAnomaly {
		fmt.Fprintln(stdout, "torture: run stopped at its first safety anomaly (--stop-on-anomaly)")
	}
	if res.Interrupted {
		fmt.Fprintln(stderr, "torture: run interrupted; the verdict covers what was recorded")
		return exitUsage
	}
	return exitCode(res.Verdict, expect.v, stdout)
}

func cmdCheck(args []string, stdout, stderr io.Writer, regs locktorture.Registries) int {
	var expect expectFlag
	opts := locktorture.CheckOptions{Timeout: locktorture.DefaultOptions().CheckTimeout, Registries: regs}
	fs := newFlags("check", stderr)
	fs.Var(&expect, "expect", "exit 0 only if the verdict is this (valid or invalid)")
	var failOn checker.FailOn
	fs.Var((*failOnFlag)(&failOn), "fail-on", failOnUsage)
	fs.DurationVar(&opts.Timeout, "check-timeout", opts.Timeout, "time limit of the linearizability check")
	fs.StringVar(&opts.OutDir, "out", "", "directory that receives linearizability.html (default: nothing is written)")
	path, help, err := parseOne(fs, args, stdout, "RUN_DIR or history.jsonl")
	if help {
		return exitValid
	} else if err != nil {
		return fail(stderr, fmt.Errorf("check: %v", err))
	}
	if opts.Timeout <= 0 {
		return fail(stderr, fmt.Errorf("check: --check-timeout %v: want a positive duration", opts.Timeout))
	}
	limitMemory()
	res, err := locktorture.Check(context.Background(), path, opts)
	if err != nil {
		return fail(stderr, fmt.Errorf("check: %v", err))
	}
	h := res.History
	if h.Run != nil {
		fmt.Fprintf(stdout, "history of run %s: lock %s, %d clients, %d keys, ttl %dms, seed %d, %d events\n",
			h.Run.ID, h.Run.Lock, h.Run.Clients, h.Run.Keys, h.Run.TTLMillis, h.Run.Seed, res.Events)
	}
	if h.Dropped > 0 {
		fmt.Fprintf(stdout, "history: left out torn last line %d (%d bytes, cut mid-write); the verdict covers the %d events before it\n",
			h.DroppedLine, h.Dropped, res.Events)
	}
	printReport(stdout, res.Report, "")
	for _, f := range res.Files {
		fmt.Fprintf(stdout, "wrote %s\n", f)
	}
	return exitCode(res.Report.Gate(failOn), expect.v, stdout)
}

func cmdList(args []string, stdout, stderr io.Writer, regs locktorture.Registries) int {
	if len(args) > 0 {
		return fail(stderr, fmt.Errorf("list: unexpected argument %q", args[0]))
	}
	section := func(title string, es []registry.Entry) {
		fmt.Fprintln(stdout, title)
		for _, e := range es {
			name, summary := e.About()
			fmt.Fprintf(stdout, "  %-21s %s\n", name, summary)
		}
	}
	section("locks (--lock):", entries(regs.Locks.Entries()))
	section("faults (--nemesis a,b,...):", entries(regs.Faults.Entries()))
	section("workloads (--workload):", entries(regs.Workloads.Entries()))
	section("topologies (--topology):", entries(regs.Topologies.Entries()))
	section("checkers (lock checkers always run; others with their workload or --checkers):", entries(regs.Checkers.Entries()))
	return exitValid
}

// entries views any registry's entries through what they share.
func entries[E registry.Entry](es []E) []registry.Entry {
	out := make([]registry.Entry, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// perKind bounds the anomalies printed of each kind; summary.json has them all.
const perKind = 3

// printReport prints the verdict and the first anomalies of each kind;
// details names the file that has them all, if one was written.
func printReport(w io.Writer, r *checker.Report, details string) {
	fmt.Fprintf(w, "verdict: %s\n", strings.ToUpper(string(r.Verdict)))
	for _, res := range r.Results {
		if res.Verdict == checker.Unknown {
			fmt.Fprintf(w, "  %s: unknown (%s)\n", res.Checker, res.Error)
		}
	}
	shown := map[checker.Kind]int{}
	for _, a := range r.Anomalies {
		if shown[a.Kind] == perKind {
			continue
		}
		shown[a.Kind]++
		kind := string(a.Kind)
		if a.Class != "" {
			kind += " (" + string(a.Class) + ")"
		}
		fmt.Fprintf(w, "  %s: %s\n", kind, a.Detail)
	}
	if len(r.Count) > 0 {
		var parts []string
		for k, n := range r.Count {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(parts)
		if details != "" {
			details = " (details in " + details + ")"
		}
		fmt.Fprintf(w, "anomalies: %s%s\n", strings.Join(parts, ", "), details)
	}
}

func exitCode(got, want checker.Verdict, w io.Writer) int {
	if want != "" {
		if got == want {
			return exitValid
		}
		fmt.Fprintf(w, "expected %s, got %s\n", want, got)
		return exitInvalid
	}
	if got == checker.Valid {
		return exitValid
	}
	return exitInvalid
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
