package locktorture

import (
	"context"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/workloads"
)

// clients are the run's clients and what watches them: the recorder, the
// live check it feeds, and the protocol watch the faults aim with.
type clients struct {
	rec    *history.Recorder
	live   *liveCheck
	watch  *nemesis.Watch
	runner *workloads.Runner
	wl     workloads.Workload
	// stopCtx ends when the run should stop early: the live check found
	// the anomaly Options.StopWhen (or StopOnAnomaly) waits for; stopped
	// says it did, for Result.StoppedOnAnomaly.
	stopCtx context.Context
	stop    context.CancelFunc
	stopped atomic.Bool
	// stopStalls ends the watch of the harness's own stalls.
	stopStalls func()
}

// startClients is stage 2: the recorder and its live check, then each
// client's lock over its own connections, and the workload they run. No
// client acts before the schedule runs. The recorder writes info as the
// history's header (to hist; nil keeps the history in memory only), and the
// live check writes what it finds into dir (empty: nothing). A lock program
// starts once here, and info records its name.
func startClients(ctx context.Context, pl *plan, e *env, info *history.RunInfo, hist *os.File, dir string) (*clients, error) {
	opts := pl.opts
	lockCfg := locks.Config{TTL: opts.TTL, Wait: opts.Wait, RetryDelay: opts.RetryDelay, Addrs: e.lockAddrs(),
		CommandTimeout: opts.RedisTimeout, Settings: pl.values, Unfaulted: len(e.faults) == 0}
	// A lock program starts once here, before the header is written: the
	// header names it beside the lock setting.
	program, err := probeLock(ctx, opts, pl.lock, lockCfg, e)
	if err != nil {
		return nil, err
	}
	info.Program = program
	c := &clients{watch: nemesis.NewWatch(aimWarmup)}
	c.stopCtx, c.stop = context.WithCancel(ctx)
	stopped := func() { c.stopped.Store(true); c.stop() }
	live, err := newLiveCheck(context.WithoutCancel(ctx), dir, opts.CheckTimeout, opts.Registries.Checkers, pl.checkers, pl.stopWhen, stopped)
	if err != nil {
		return nil, err
	}
	c.live = live
	var out io.Writer // nil: the history stays in memory only
	if hist != nil {
		out = hist
	}
	// The history is checked while it is recorded, and kept only on disk.
	c.rec = history.NewRecorder(out, info, 100*time.Millisecond, history.KeepNone(), history.OnEvent(live.add))
	c.stopStalls = live.watchStalls(c.rec)
	if o, ok := e.topo.(cluster.Observed); ok {
		o.Observe(func(ev history.Event) { c.rec.Info(ev) }) // master switches
	}
	var steps func(nemesis.ProtocolEvent)
	if len(e.faults) > 0 {
		// Only a fault aims at protocol steps: a fault-free run spends
		// nothing on telling them.
		steps = c.watch.Emit
	}
	c.runner, err = workloads.NewRunner(workloads.Config{
		Clients: opts.Clients, Share: opts.Share, Keys: opts.Keys, TTL: opts.TTL, Seed: opts.Seed,
		Lock:       pl.lock.New,
		LockConfig: lockCfg,
		Connect:    e.connector(opts),
		Dial:       e.dialer,
		Routes:     e.routes,
		Recorder:   c.rec,
		Logf:       opts.Logf,
		Observe:    steps,
	})
	if err != nil {
		c.close()
		return nil, usage("%v", err)
	}
	if c.wl, err = pl.workload.New(c.runner, pl.shape()); err != nil {
		c.close()
		return nil, usage("%v", err)
	}
	return c, nil
}

// close ends the recording (idempotent: the schedule stage closes it first
// when the run ends normally).
func (c *clients) close() {
	c.stop()
	c.stopStalls()
	_ = c.rec.Close()
}
