package locktorture

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/workloads"
)

// env is what a run stands on: the proxies and the Redis topology.
type env struct {
	// faults are built before the servers start: some start them their own
	// way (nemesis.Preparer: under libfaketime, with AOF always).
	faults []nemesis.Fault
	net    *cluster.Network
	topo   cluster.Topology
	be     cluster.Backend // nil: local processes, owned by the topology
	// direct: the clients dial Redis themselves, not through their
	// proxies (see startEnv).
	direct bool
	logf   func(format string, args ...any)
	once   sync.Once
}

// startEnv is stage 1: the faults, the backend, the network of fault proxies
// and the Redis topology, with every client's path to every node.
func startEnv(ctx context.Context, pl *plan) (*env, error) {
	opts := pl.opts
	faults := nemesis.Build(pl.faults, pl.values)
	local := cluster.Options{RedisServer: opts.RedisServer, Persistence: opts.Persistence}
	if err := nemesis.Prepare(faults, &local); err != nil {
		return nil, err
	}
	be, err := startBackend(ctx, pl)
	if err != nil {
		return nil, err
	}
	local.Backend = be
	netw, err := cluster.StartNetwork(ctx, opts.Toxiproxy)
	if err != nil {
		closeBackend(be)
		return nil, err
	}
	topo, err := pl.topology.Start(ctx, cluster.TopologyOptions{
		Local: local, Network: netw, Nodes: pl.nodes,
	})
	if err != nil {
		netw.Close()
		closeBackend(be)
		return nil, err
	}
	// A run without faults has nothing to do with the clients' proxies,
	// and each command would pay two more hops for them: its clients
	// dial Redis directly, unless the user runs a Toxiproxy of their own
	// (--toxiproxy) to add toxics to those paths by hand.
	direct := len(faults) == 0 && opts.Toxiproxy == ""
	e := &env{faults: faults, net: netw, topo: topo, be: be, direct: direct, logf: opts.Logf}
	if err := checkBackend(be, opts.Topology); err != nil {
		e.close()
		return nil, err
	}
	if err := checkLockNodes(topo, opts, pl.lock); err != nil {
		e.close()
		return nil, err
	}
	// Every client's path to every node exists before the first fault, so
	// a fault started early reaches all of them.
	for c := 0; c < opts.Clients && !direct; c++ {
		for _, n := range topo.Nodes() {
			if _, err := netw.Route(nemesis.ClientName(c), n.Addr()); err != nil {
				e.close()
				return nil, err
			}
		}
	}
	return e, nil
}

// checkLockNodes refuses a lock that needs more masters than the topology
// gives its clients (redlock on one node), instead of a run in which no
// client can ever build its lock.
func checkLockNodes(topo cluster.Topology, opts Options, entry locks.Entry) error {
	refuse := func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("not dialled: only counting the lock nodes")
	}
	nodes, err := topo.Connect(refuse, nil)
	if err != nil {
		return fmt.Errorf("connect to topology %s: %w", opts.Topology, err)
	}
	for _, n := range nodes {
		_ = n.Close()
	}
	if len(nodes) < entry.Masters() {
		return usage("lock %s needs %d independent masters, topology %s gives %d (use --topology redlock --nodes N)",
			opts.Lock, entry.Masters(), opts.Topology, len(nodes))
	}
	return nil
}

func (e *env) close() {
	e.once.Do(func() {
		// A user's server gives up the run's keys here: say if it did not.
		if err := e.topo.Close(); err != nil {
			e.logf("stop topology: %v", err)
		}
		if err := closeBackend(e.be); err != nil {
			e.logf("%v", err)
		}
		e.net.Close()
	})
}

// connector opens a process's connections through its client's proxies and
// its gate, with the go-redis settings the user chose.
func (e *env) connector(opts Options) func(int, *workloads.Gate) ([]redis.UniversalClient, error) {
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
		nodes, err := e.topo.Connect(e.dialer(client, gate), tune)
		if err != nil {
			return nil, fmt.Errorf("connect client %d: %w", client, err)
		}
		return nodes, nil
	}
}

// dialer dials for one process: through its client's proxies, then its gate.
// Its go-redis clients and a lock library's own connections both use it.
func (e *env) dialer(client int, gate *workloads.Gate) func(ctx context.Context, network, addr string) (net.Conn, error) {
	dial := e.net.Dialer(nemesis.ClientName(client))
	if e.direct {
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
func (e *env) lockAddrs() []string {
	switch e.topo.(type) {
	case *cluster.Masters, *cluster.Redlock:
	default:
		return nil
	}
	var out []string
	for _, n := range e.topo.Nodes() {
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
func (e *env) routes(client int) locks.Routes {
	r := locks.Routes{Topology: e.topo.Name()}
	if addrs := e.lockAddrs(); len(addrs) > 0 {
		r.Addrs = e.own(client, addrs)
		return r
	}
	d, ok := e.topo.(cluster.Discovered)
	if !ok {
		return r
	}
	ds := d.Discovery()
	r.MasterName, r.Sentinels, r.Addrs = ds.MasterName, e.own(client, ds.Sentinels), e.own(client, ds.Seeds)
	r.AddrMap = make(map[string]string, len(ds.Announced))
	for from, node := range ds.Announced {
		to := e.own(client, []string{node})
		if len(to) == 0 {
			return locks.Routes{Topology: r.Topology}
		}
		r.AddrMap[from] = to[0]
	}
	return r
}

// own returns one client's own addresses of addrs: its proxies, or addrs
// themselves in a run without faults. Nil if a proxy cannot be had.
func (e *env) own(client int, addrs []string) []string {
	if e.direct || len(addrs) == 0 {
		return addrs
	}
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		p, err := e.net.Route(nemesis.ClientName(client), a)
		if err != nil {
			// The run made every route to a node before it began: only
			// a network closed under the run ends here.
			e.logf("route client %d to %s: %v", client, a, err)
			return nil
		}
		out = append(out, p.Listen)
	}
	return out
}

// clientSet lets client faults reach the runner's live processes.
type clientSet struct{ r *workloads.Runner }

func (c clientSet) Count() int { return c.r.Clients() }

func (c clientSet) Gate(i int) nemesis.Gate {
	p := c.r.Current(i)
	if p == nil {
		return nil
	}
	return p.Gate
}

// probeLock checks, for a lock that can (a lock program), that it runs at
// all before any client starts, and returns the name and version its
// handshake gives, for the header beside the lock setting (the setting, an
// exec: command line included, is what replays the run); empty for an
// in-process lock.
func probeLock(ctx context.Context, opts Options, entry locks.Entry, cfg locks.Config, e *env) (program string, err error) {
	if entry.Probe == nil {
		return "", nil
	}
	cfg.Routes = e.routes(0)
	cfg.Rand = rand.New(rand.NewSource(opts.Seed))
	if opts.Share > 1 {
		// As the first group will run it: a program that cannot serve
		// shared clients says so before any client starts.
		for c := range min(opts.Share, opts.Clients) {
			cfg.Clients = append(cfg.Clients, c)
		}
	}
	program, err = entry.Probe(ctx, cfg)
	if err != nil {
		return "", usage("lock %s: %v", opts.Lock, err)
	}
	return program, nil
}
