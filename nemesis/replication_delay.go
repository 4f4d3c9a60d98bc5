// The replication-delay fault: a slow replication stream, so that a
// failover promotes a replica without the newest locks and a lock that
// waits for a replica's acknowledgement refuses to acquire, with its entry.
// Its delay is read from latency's settings (latency.go).

package nemesis

import (
	"context"
	"math/rand"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/settings"
)

// replicationDelay slows the replication stream from the master to every
// replica: a lock key reaches them only after the delay (the TTL by
// default), so a failover in that window promotes a replica without it, and
// a lock that waits for a replica's acknowledgement (token-wait) refuses to
// acquire meanwhile.
type replicationDelay struct{ toxicFault }

// nameReplicationDelay is the fault's one name: its entry's, its toxics', its own.
const nameReplicationDelay = "replication-delay"

// replicationDelayEntry is the registry entry of replication-delay, with the settings it reads.
func replicationDelayEntry() Entry {
	return Entry{Name: nameReplicationDelay,
		Summary:    "delay the replication stream from the master to every replica (default: the TTL)",
		New:        newReplicationDelay,
		Topologies: []string{"sentinel"},
		Settings:   []settings.Setting{setLatency(), setJitter()}}
}

func newReplicationDelay(o Options) Fault {
	f := &replicationDelay{toxicFault{name: nameReplicationDelay, toxic: "latency", direction: "down", toxicity: 1,
		attrs: func(t *Target) toxiclient.Attributes {
			lat, jit := o.Duration("latency"), o.Duration("jitter")
			if lat == 0 {
				lat = t.TTL
			}
			if jit == 0 {
				jit = lat / 10
			}
			return toxiclient.Attributes{"latency": lat.Milliseconds(), "jitter": jit.Milliseconds()}
		}}}
	f.pick = func(t *Target, _ *rand.Rand) ([]*cluster.Path, string) {
		ft, err := needSentinel(t)
		if err != nil {
			return nil, ""
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m, err := ft.Master(ctx)
		if err != nil {
			return nil, ""
		}
		return ft.ReplicationPaths(m), "replication from " + m.Name
	}
	return f
}

func (f *replicationDelay) Available(t *Target) error {
	if _, err := needSentinel(t); err != nil {
		return err
	}
	return f.toxicFault.Available(t)
}
