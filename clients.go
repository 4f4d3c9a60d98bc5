package locktorture

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/workloads"
)

// fleet is what stage 2 hands on: the run's clients, their lock and
// workload, and what watches them (the recorder with the history's header,
// the live check it feeds, and the protocol watch the faults aim with).
type fleet struct {
	header *history.RunInfo
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

// aimWarmup is the quiet warm-up of aimed faults, in acquires of each
// client: the first fault hits no client before its 4th acquire or so.
const aimWarmup = 3

// startClients is stage 2: the lock (a lock program starts once here, and
// the header names it), the header, the recorder writing it to hist (nil:
// the history stays in memory only) with its live check writing into dir
// (empty: nothing), then each client's lock over its own connections and
// the workload they run. No client acts before the schedule runs.
func startClients(ctx context.Context, pl *plan, srv *servers, hist io.Writer, dir string) (*fleet, error) {
	opts := pl.opts
	lockCfg := locks.Config{TTL: opts.TTL, Wait: opts.Wait, RetryDelay: opts.RetryDelay, Addrs: srv.lockAddrs(), RedisRetries: opts.RedisRetries,
		CommandTimeout: opts.RedisTimeout, Settings: pl.values}
	program, err := probeLock(ctx, pl, lockCfg, srv)
	if err != nil {
		return nil, err
	}
	f := &fleet{header: pl.header(program), watch: nemesis.NewWatch(aimWarmup)}
	f.stopCtx, f.stop = context.WithCancel(ctx)
	stopped := func() { f.stopped.Store(true); f.stop() }
	live, err := newLiveCheck(context.WithoutCancel(ctx), dir, opts.CheckTimeout, opts.Registries.Checkers, pl.checkers, pl.stopWhen, stopped)
	if err != nil {
		f.stop()
		return nil, err
	}
	f.live = live
	// The history is checked while it is recorded, and kept only on disk.
	f.rec = history.NewRecorder(hist, f.header, 100*time.Millisecond, history.KeepNone(), history.OnEvent(live.add))
	f.stopStalls = live.watchStalls(f.rec)
	if o, ok := srv.topo.(cluster.Observed); ok {
		o.Observe(func(ev history.Event) { f.rec.Info(ev) }) // master switches
	}
	var steps func(nemesis.ProtocolEvent)
	var armed func(int) bool
	if len(srv.faults) > 0 {
		// Only a fault aims at protocol steps: a fault-free run spends
		// nothing on telling them, and a lock program there never waits
		// for a go.
		steps, armed = f.watch.Emit, f.watch.Armed
	}
	f.runner, err = workloads.NewRunner(workloads.Config{
		Clients: opts.Clients, Share: opts.Share, Keys: opts.Keys, TTL: opts.TTL, Seed: opts.Seed,
		Lock:       pl.lock.New,
		LockConfig: lockCfg,
		Connect:    srv.connector(opts),
		Dial:       srv.dialer,
		Routes:     srv.routes,
		Recorder:   f.rec,
		Logf:       opts.Logf,
		Observe:    steps,
		Armed:      armed,
	})
	if err != nil {
		f.close()
		return nil, usage("%v", err)
	}
	if f.wl, err = pl.workload.New(f.runner, pl.shape()); err != nil {
		f.close()
		return nil, usage("%v", err)
	}
	return f, nil
}

// close ends the recording (idempotent: the schedule stage closes it first
// when the run ends normally).
func (f *fleet) close() {
	f.stop()
	f.stopStalls()
	_ = f.rec.Close()
}

// probeLock checks, for a lock that can (a lock program), that it runs at
// all before any client starts, and returns the name and version its
// handshake gives, for the header beside the lock setting (the setting, an
// exec: command line included, is what replays the run); empty for an
// in-process lock.
func probeLock(ctx context.Context, pl *plan, cfg locks.Config, srv *servers) (program string, err error) {
	opts := pl.opts
	if pl.lock.Probe == nil {
		return "", nil
	}
	cfg.Routes = srv.routes(0)
	cfg.Rand = rand.New(rand.NewSource(opts.Seed))
	if opts.Share > 1 {
		// As the first group will run it: a program that cannot serve
		// shared clients says so before any client starts.
		for c := range min(opts.Share, opts.Clients) {
			cfg.Clients = append(cfg.Clients, c)
		}
	}
	program, err = pl.lock.Probe(ctx, cfg)
	if err != nil {
		return "", usage("lock %s: %w", opts.Lock, err)
	}
	return program, nil
}

// connector opens a process's connections through its client's proxies and
// its gate, with the go-redis settings the user chose.
func (s *servers) connector(opts Options) func(int, *workloads.Gate) ([]redis.UniversalClient, error) {
	tune := func(o *redis.Options) {
		// No lock here needs RESP3's push messages, and over RESP3 go-redis
		// looks for pending ones before every command: a tenth of a
		// full-speed run's client CPU.
		o.Protocol = 2
		if opts.RedisRetries != nil {
			o.MaxRetries = *opts.RedisRetries
		}
		if opts.RedisTimeout > 0 {
			o.DialTimeout, o.ReadTimeout, o.WriteTimeout = opts.RedisTimeout, opts.RedisTimeout, opts.RedisTimeout
		}
	}
	return func(client int, gate *workloads.Gate) ([]redis.UniversalClient, error) {
		nodes, err := s.topo.Connect(s.dialer(client, gate), tune)
		if err != nil {
			return nil, fmt.Errorf("connect client %d: %w", client, err)
		}
		return nodes, nil
	}
}

// dialer dials for one process: through its client's proxies, then its gate.
// Its go-redis clients and a lock library's own connections both use it.
func (s *servers) dialer(client int, gate *workloads.Gate) func(ctx context.Context, network, addr string) (net.Conn, error) {
	dial := s.net.Dialer(nemesis.ClientName(client))
	if s.direct {
		var d net.Dialer
		dial = d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return gate.Conn(c), nil
	}
}

// lockAddrs are the masters a lock library dials itself (locks.Config.Addrs):
// every node of the independent-master topologies; none on sentinel, whose
// master moves.
func (s *servers) lockAddrs() []string {
	switch s.topo.(type) {
	case *cluster.Masters, *cluster.Redlock:
	default:
		return nil
	}
	var out []string
	for _, n := range s.topo.Nodes() {
		out = append(out, n.Addr())
	}
	return out
}

// routes tell a lock that runs as a program, and dials for itself, where
// one client's servers are (locks.Config.Routes): lockAddrs on single and
// redlock; the Sentinels, or the cluster's nodes as seeds, with a map from
// every address a server announces, on a topology whose master moves. Every
// address is the client's own: its proxy, so that network faults reach the
// program, or the node itself in a run without faults. Empty where the
// topology does not say where its servers are.
func (s *servers) routes(client int) locks.Routes {
	r := locks.Routes{Topology: s.topo.Name()}
	if addrs := s.lockAddrs(); len(addrs) > 0 {
		r.Addrs = s.own(client, addrs)
		return r
	}
	d, ok := s.topo.(cluster.Discovered)
	if !ok {
		return r
	}
	ds := d.Discovery()
	r.MasterName, r.Sentinels, r.Addrs = ds.MasterName, s.own(client, ds.Sentinels), s.own(client, ds.Seeds)
	r.AddrMap = make(map[string]string, len(ds.Announced))
	for from, node := range ds.Announced {
		to := s.own(client, []string{node})
		if len(to) == 0 {
			return locks.Routes{Topology: r.Topology}
		}
		r.AddrMap[from] = to[0]
	}
	return r
}

// own returns one client's own addresses of addrs: its proxies, or addrs
// themselves in a run without faults. Nil if a proxy cannot be had.
func (s *servers) own(client int, addrs []string) []string {
	if s.direct || len(addrs) == 0 {
		return addrs
	}
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		p, err := s.net.Route(nemesis.ClientName(client), a)
		if err != nil {
			// The run made every route to a node before it began: only
			// a network closed under the run ends here.
			s.logf("route client %d to %s: %v", client, a, err)
			return nil
		}
		out = append(out, p.Listen)
	}
	return out
}
