// Package cli is the torture command: it parses flags and prints, and
// package locktorture does the work. Its Main takes the registries the
// command draws on, so a team's own main, with its locks, faults, workloads
// and checkers registered beside the built-ins, gets every subcommand
// (run, check, report, matrix, shrink, serve, list, clean, image, museum)
// for them:
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
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/registry"
	"github.com/locktorture/locktorture/settings"
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
  torture matrix SPEC.yaml [--seeds A..B] [--out DIR] [--cells FILTER] [--shard K/N] [--resume]
                                        run a spec of locks x faults x seeds against its expectations
  torture matrix merge --out DIR SHARD_DIR...
                                        put the shards of a matrix back together
  torture shrink RUN_DIR [--kind KIND[/CLASS]] [--budget D] [--out DIR]
                                        find the smallest run that still shows the run's anomaly
  torture hunt --lock L [--budget D] [--seed N] [--out DIR] [--strategy feedback|random] [--expect holds|breaks]
                                        search the runs of a lock for the ways it breaks, without being told where to look
  torture serve [DIR] [--port N]        browse the runs and matrices under DIR (default results/) on 127.0.0.1
  torture list                          list the locks
  torture clean [--all]                 remove the containers, networks, processes and temp dirs killed runs left
  torture image [--tag NAME] [--print]  build the image a cluster runs torture in (locktorture:REVISION), pulling nothing
  torture museum [BUGS_DIR] [--exhibits a,b] [--seeds A..B] [--out DIR]
                                        build and run the exhibits of the bug museum (bugs/), each library's bug beside its fix
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
	case "serve":
		return cmdServe(args[1:], stdout, stderr)
	case "shrink":
		return cmdShrink(args[1:], stdout, stderr, regs)
	case "list":
		return cmdList(args[1:], stdout, stderr, regs)
	case "clean":
		return cmdClean(args[1:], stdout, stderr)
	case "image":
		return cmdImage(args[1:], stdout, stderr)
	case "museum":
		return cmdMuseum(args[1:], stdout, stderr)
	case "hunt":
		return cmdHunt(args[1:], stdout, stderr, regs)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usageText)
		return exitValid
	}
	fmt.Fprintf(stderr, "torture: unknown command %q (want run, check, report, matrix, shrink, hunt, serve, list, clean, image or museum)\n", args[0])
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

// parseStop says whether parsing a command's flags ends it, and with which
// exit code: 0 once -h printed the help, 2 for a bad flag or argument,
// named after the command (what) in one line on stderr.
func parseStop(help bool, err error, what string, stderr io.Writer) (code int, stop bool) {
	switch {
	case help:
		return exitValid, true
	case err != nil:
		return fail(stderr, fmt.Errorf("%s: %v", what, err)), true
	}
	return 0, false
}

// parseOne parses flags given before or after one positional argument, the
// path a check, report or matrix works on; want names it in the error.
func parseOne(fs *flag.FlagSet, args []string, stdout io.Writer, want string) (path string, help bool, err error) {
	paths, help, err := parsePositional(fs, args, stdout, fmt.Sprintf("usage: torture %s [flags] %s", fs.Name(), want))
	if help || err != nil {
		return "", help, err
	}
	if len(paths) != 1 {
		return "", false, fmt.Errorf("want exactly one %s", want)
	}
	return paths[0], false, nil
}

// parsePositional parses flags given before, between or after positional
// arguments and returns those; -h prints usage and the flags.
func parsePositional(fs *flag.FlagSet, args []string, stdout io.Writer, usage string) (paths []string, help bool, err error) {
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, usage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil, true, nil
		}
		if err != nil {
			return nil, false, err
		}
		if fs.NArg() == 0 {
			return paths, false, nil
		}
		paths = append(paths, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func cmdRun(args []string, stdout, stderr io.Writer, regs locktorture.Registries) int {
	opts := locktorture.DefaultOptions()
	opts.Registries = regs
	opts.Seed = time.Now().UnixNano() % 1_000_000
	var expect checker.Verdict
	var quiet bool
	all, err := runSettings(regs)
	if err != nil {
		return fail(stderr, fmt.Errorf("run: %v", err))
	}
	fs := newFlags("run", stderr)
	addSettings(fs, all, func(name, text string) error {
		switch name {
		case expectSetting.Name:
			expect = checker.Verdict(text)
			return nil
		case quietSetting.Name:
			v, err := quietSetting.Parse(text)
			quiet, _ = v.(bool)
			return err
		}
		return opts.Set(name, text)
	})
	help, err := parse(fs, args, stdout)
	if code, stop := parseStop(help, err, "run", stderr); stop {
		return code
	}
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
	fmt.Fprintf(stdout, "torture: %s on %s, %d clients, %d keys, ttl %v, hold %v..%v, %v, seed %d\n",
		opts.Lock, opts.Topology, opts.Clients, opts.Keys, opts.TTL, opts.HoldMin, opts.HoldMax, opts.Duration, opts.Seed)
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
	printRun(stdout, res)
	if res.Interrupted {
		fmt.Fprintln(stderr, "torture: run interrupted; the verdict covers what was recorded")
		return exitUsage
	}
	return exitCode(res.Verdict, expect, stdout)
}

// printRun prints what a run did and found: its operations, the harness's
// own stalls, what its faults hit, the verdict's report and where the run
// folder is.
func printRun(stdout io.Writer, res *locktorture.Result) {
	fmt.Fprintf(stdout, "%d ops in %.1fs (%.0f ops/s): %d acquired, %d failed, %d unknown, %d crashes\n",
		res.Stats.Ops, res.Stats.Duration.Seconds(), res.Stats.OpsPerSec, res.Stats.Acquired,
		res.Stats.AcquireFailed, res.Stats.Unknown, res.Stats.Crashes)
	if st := res.Stats; st.Stalls > 0 {
		fmt.Fprintf(stdout, "harness stalls: %d of 50ms or more, the longest %dms\n", st.Stalls, st.LongestStallMs)
	}
	if f := res.Stats.Faults; f != nil {
		tried := 0
		for _, c := range f.ByFault {
			tried += c.Started
		}
		fmt.Fprintf(stdout, "faults: %d of %d starts took effect, %d found a target (%d after waiting, %d past the planned step), %d gave up\n",
			f.Started, tried, f.Aimed, f.Waited, f.Late, f.GaveUp)
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
}

func cmdCheck(args []string, stdout, stderr io.Writer, regs locktorture.Registries) int {
	var expect checker.Verdict
	var failOn checker.FailOn
	opts := locktorture.CheckOptions{Timeout: locktorture.DefaultOptions().CheckTimeout, Registries: regs}
	fs := newFlags("check", stderr)
	err := addShared(fs, checkShared, func(decl settings.Setting, v any) {
		switch decl.Name {
		case expectSetting.Name:
			expect = checker.Verdict(v.(string))
		case "fail-on":
			failOn = checker.FailOn(v.(string))
		case "check-timeout":
			opts.Timeout = v.(time.Duration)
		}
	})
	if err != nil {
		return fail(stderr, fmt.Errorf("check: %v", err))
	}
	fs.StringVar(&opts.OutDir, "out", "", "directory that receives linearizability.html (default: nothing is written)")
	path, help, err := parseOne(fs, args, stdout, "RUN_DIR or history.jsonl")
	if code, stop := parseStop(help, err, "check", stderr); stop {
		return code
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
			h.Run.ID, h.Run.LockLabel(), h.Run.Clients, h.Run.Keys, h.Run.TTLMillis, h.Run.Seed, res.Events)
	}
	if h.Dropped > 0 {
		fmt.Fprintf(stdout, "history: left out torn last line %d (%d bytes, cut mid-write); the verdict covers the %d events before it\n",
			h.DroppedLine, h.Dropped, res.Events)
	}
	printReport(stdout, res.Report, "")
	for _, f := range res.Files {
		fmt.Fprintf(stdout, "wrote %s\n", f)
	}
	return exitCode(res.Report.Gate(failOn), expect, stdout)
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
			if d, ok := e.(interface{ Declared() []settings.Setting }); ok {
				for _, st := range d.Declared() {
					fmt.Fprintf(stdout, "  %-21s   --%s: %s\n", "", st.Name, usageLine(st))
				}
			}
		}
	}
	section("locks (--lock):", entries(regs.Locks.Entries()))
	section("faults (--faults a,b,...):", entries(regs.Faults.Entries()))
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
