package locktorture

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/locktorture/locktorture/cluster"
)

// The backends a run's servers can stand on (Options.Backend).
const (
	BackendLocal    = "local"    // redis-server processes of the harness (default)
	BackendDocker   = "docker"   // containers of a locally built image
	BackendExternal = "external" // the user's own servers (Options.Redis, Options.Sentinels)
)

// validateBackend judges the backend options as given.
func (o Options) validateBackend() error {
	switch o.Backend {
	case "", BackendLocal, BackendDocker:
		if len(o.Redis) > 0 || len(o.Sentinels) > 0 {
			return usage("--redis and --sentinel name a user's own servers: use them with --backend external")
		}
		return nil
	case BackendExternal:
	default:
		return usage("--backend %q: want local, docker or external", o.Backend)
	}
	for _, a := range append(append([]string(nil), o.Redis...), o.Sentinels...) {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return usage("--redis/--sentinel address %q: want host:port", a)
		}
	}
	topo := o.Topology
	if topo == "" {
		topo = DefaultOptions().Topology
	}
	switch {
	case topo == "sentinel" && len(o.Sentinels) == 0:
		return usage("--backend external --topology sentinel needs the Sentinels' addresses (--sentinel host:port,...)")
	case topo == "sentinel" && len(o.Redis) > 0:
		return usage("--backend external --topology sentinel asks the Sentinels for the master: drop --redis")
	case topo != "sentinel" && len(o.Sentinels) > 0:
		return usage("--sentinel needs --topology sentinel")
	case topo != "sentinel" && len(o.Redis) == 0:
		return usage("--backend external needs the servers' addresses (--redis host:port,...)")
	case topo == "single" && len(o.Redis) != 1:
		return usage("--topology single takes one server, --redis gives %d", len(o.Redis))
	case topo == "redlock" && o.Nodes != 0 && o.Nodes != len(o.Redis):
		return usage("--nodes %d but --redis gives %d servers", o.Nodes, len(o.Redis))
	}
	return nil
}

// keyPrefix is the prefix of every key of the run: the user's, or on a
// user's own Redis one unique to the run, so that its keys can be told from
// the user's and deleted at the end.
func (o Options) keyPrefix() string {
	if o.KeyPrefix == "" && o.Backend == BackendExternal {
		return "locktorture:" + o.RunID + ":"
	}
	return o.KeyPrefix
}

// startBackend makes the run's backend; nil means local processes, which
// each topology makes and removes itself.
func startBackend(ctx context.Context, o Options) (cluster.Backend, error) {
	switch o.Backend {
	case BackendDocker:
		d, err := cluster.NewDocker(ctx, cluster.DockerOptions{Endpoint: o.DockerHost, RunID: o.RunID,
			RedisServer: o.RedisServer, Logf: o.Logf})
		if errors.Is(err, cluster.ErrDocker) {
			return nil, &UsageError{err}
		}
		return d, err
	case BackendExternal:
		master := o.SentinelMaster
		if master == "" {
			master = "mymaster" // the name in Redis's sample sentinel.conf
		}
		e, err := cluster.NewExternal(cluster.ExternalOptions{Redis: o.Redis, Sentinels: o.Sentinels,
			Master: master, KeyPrefix: o.KeyPrefix})
		if err != nil {
			return nil, &UsageError{err}
		}
		return e, nil
	}
	return nil, nil
}

// checkBackend refuses servers given and not used by the topology.
func checkBackend(be cluster.Backend, topology string) error {
	if e, ok := be.(*cluster.External); ok && e.Unused() > 0 {
		return usage("topology %s does not use %d of the servers --redis gives", topology, e.Unused())
	}
	return nil
}

// closeBackend closes be, if any.
func closeBackend(be cluster.Backend) error {
	if be == nil {
		return nil
	}
	if err := be.Close(); err != nil {
		return fmt.Errorf("close %s backend: %w", be.Name(), err)
	}
	return nil
}
