package locktorture

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/nemesis"
)

// servers are what a run stands on (stage 1): its faults, the Redis
// topology on its backend, and the network of fault proxies between every
// client and every node.
type servers struct {
	// faults are built before the servers start: some start them their own
	// way (nemesis.Preparer: under libfaketime, with AOF always).
	faults []nemesis.Fault
	net    *cluster.Network
	topo   cluster.Topology
	be     cluster.Backend // nil: local processes, owned by the topology
	// direct: the clients dial Redis themselves, not through their
	// proxies (see startServers).
	direct bool
	logf   func(format string, args ...any)
	once   sync.Once
}

// startServers is stage 1: the backend, the faults, the network of fault
// proxies and the Redis topology, with every client's path to every node.
// It refuses servers given and not used by the topology, and a lock that
// needs more masters than the topology gives its clients (redlock on one
// node), instead of a run in which no client can ever build its lock.
func startServers(ctx context.Context, pl *plan) (*servers, error) {
	opts := pl.opts
	be, err := startBackend(ctx, pl)
	if err != nil {
		return nil, err
	}
	s := &servers{be: be, faults: nemesis.Build(pl.faults, pl.values), logf: opts.Logf}
	local := cluster.Options{RedisServer: opts.RedisServer, Persistence: opts.Persistence, Backend: be}
	if err := nemesis.Prepare(s.faults, &local); err != nil {
		s.close()
		return nil, err
	}
	if s.net, err = cluster.StartNetwork(ctx, opts.Toxiproxy); err != nil {
		s.close()
		return nil, err
	}
	if s.topo, err = pl.topology.Start(ctx, cluster.TopologyOptions{Local: local, Network: s.net, Nodes: pl.nodes}); err != nil {
		s.close()
		return nil, err
	}
	// A run without faults has nothing to do with the clients' proxies,
	// and each command would pay two more hops for them: its clients
	// dial Redis directly, unless the user runs a Toxiproxy of their own
	// (--toxiproxy) to add toxics to those paths by hand.
	s.direct = len(s.faults) == 0 && opts.Toxiproxy == ""
	if e, ok := be.(*cluster.External); ok && e.Unused() > 0 {
		s.close()
		return nil, usage("topology %s does not use %d of the servers --redis gives", opts.Topology, e.Unused())
	}
	refuse := func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("not dialled: only counting the lock nodes")
	}
	nodes, err := s.topo.Connect(refuse, nil)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("connect to topology %s: %w", opts.Topology, err)
	}
	for _, n := range nodes {
		_ = n.Close()
	}
	if len(nodes) < pl.lock.Masters() {
		s.close()
		return nil, usage("lock %s needs %d independent masters, topology %s gives %d (use --topology redlock --nodes N)",
			opts.Lock, pl.lock.Masters(), opts.Topology, len(nodes))
	}
	// Every client's path to every node exists before the first fault, so
	// a fault started early reaches all of them.
	for c := 0; c < opts.Clients && !s.direct; c++ {
		for _, n := range s.topo.Nodes() {
			if _, err := s.net.Route(nemesis.ClientName(c), n.Addr()); err != nil {
				s.close()
				return nil, err
			}
		}
	}
	return s, nil
}

// startBackend makes the run's backend; nil means local processes, which
// each topology makes and removes itself.
func startBackend(ctx context.Context, p *plan) (cluster.Backend, error) {
	o := p.opts
	switch o.Backend {
	case BackendDocker:
		d, err := cluster.NewDocker(ctx, cluster.DockerOptions{Endpoint: o.DockerHost, RunID: o.RunID,
			RedisServer: o.RedisServer, Logf: o.Logf})
		if errors.Is(err, cluster.ErrDocker) {
			return nil, &UsageError{err}
		}
		return d, err
	case BackendExternal:
		e, err := cluster.NewExternal(cluster.ExternalOptions{Redis: o.Redis, Sentinels: o.Sentinels,
			Master: p.master, KeyPrefix: o.KeyPrefix})
		if err != nil {
			return nil, &UsageError{err}
		}
		return e, nil
	}
	return nil, nil
}

// close stops what stage 1 started: the servers, the backend, the
// network. It runs once, however often it is called, and after a start
// that failed part way.
func (s *servers) close() {
	s.once.Do(func() {
		if s.topo != nil {
			// A user's server gives up the run's keys here: say if it did not.
			if err := s.topo.Close(); err != nil {
				s.logf("stop topology: %v", err)
			}
		}
		if s.be != nil {
			if err := s.be.Close(); err != nil {
				s.logf("close %s backend: %v", s.be.Name(), err)
			}
		}
		if s.net != nil {
			s.net.Close()
		}
	})
}
