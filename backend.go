package locktorture

import (
	"context"
	"errors"
	"fmt"

	"github.com/locktorture/locktorture/cluster"
)

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
