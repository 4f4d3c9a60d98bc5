// The latency fault: slow replies, the seed's 2.5 s acquire under a 2 s
// TTL, with its entry and the settings of its delay (latency, jitter,
// latency-all), which replication-delay reads too.

package nemesis

import (
	"context"
	"math/rand"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/settings"
)

// latency delays traffic between one client (or every client) and one
// node. Latency above the TTL on acquire replies is the seed's 2.5 s acquire
// under a 2 s TTL: a lock that does not measure its acquire believes a lease
// that has already expired, while a faster client takes the key.
//
// Aimed (the default), it lands on a client's acquire attempt about to be
// sent while no client holds the key, the attempt that wins: the toxic is
// on that client's paths to every node before its command goes out (every
// client's, with LatencyAll), so the reply of that very command comes late.
type latency struct{ *toxicFault }

// nameLatency is the fault's one name: its entry's, its toxics', its own.
const nameLatency = "latency"

// latencyEntry is the registry entry of latency, with the settings it reads.
func latencyEntry() Entry {
	return Entry{Name: nameLatency,
		Summary:  "toxiproxy latency (with jitter) on one client's (or every client's) path to one node, per direction",
		New:      newLatency,
		Settings: []settings.Setting{setLatency(), setJitter(), setLatencyAll(), setDirection()}}
}

// setLatency is the delay latency adds, and replication-delay too.
func setLatency() settings.Setting {
	return settings.Setting{Name: "latency", Kind: settings.Duration, Default: "1.25 x TTL",
		Help: "latency fault delay: an acquire reply that arrives after the key expired, but before the next holder is done with it"}
}

// setJitter varies the delay of latency and replication-delay.
func setJitter() settings.Setting {
	return settings.Setting{Name: "jitter", Kind: settings.Duration, Default: "5% of the latency", Help: "latency fault jitter"}
}

// setLatencyAll makes latency slow every client rather than one.
func setLatencyAll() settings.Setting {
	return settings.Setting{Name: "latency-all", Kind: settings.Bool, Default: "false",
		Help: "latency fault delays every client, not one (everyone slow together rarely overlaps, one slow client among fast ones does)"}
}

// Aims implements Aiming.
func (latency) Aims() bool { return true }

func (f latency) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	if !t.aimsAtClients() {
		return f.toxicFault.Start(ctx, t, rng, mark)
	}
	all := f.all
	// The attempt that will win: the client is about to send it while
	// nobody holds the key, so its own ok comes back after the TTL.
	fl := Filter{Kind: Point, Points: []string{"attempt"}, Client: rng.Intn(t.Clients.Count()), Skip: aimSkip(rng), Free: true}
	return f.aimToxic(ctx, t, fl, mark, func(e ProtocolEvent) ([]*cluster.Path, string) {
		if all {
			return clientPaths(t, ""), "all clients <-> every node"
		}
		return clientToEveryNode(t, e.Client)
	})
}

func newLatency(o Options) Fault {
	pick := oneClientToOneNode
	if o.Bool("latency-all") {
		pick = everyClientToOneNode
	}
	return latency{&toxicFault{name: nameLatency, all: o.Bool("latency-all"), toxic: "latency", direction: orDefault(o.String("direction"), "down"), toxicity: 1,
		pick: pick,
		attrs: func(t *Target) toxiclient.Attributes {
			lat, jit := o.Duration("latency"), o.Duration("jitter")
			if lat == 0 {
				lat = t.TTL * 5 / 4
			}
			if jit == 0 {
				jit = lat / 20
			}
			return toxiclient.Attributes{"latency": lat.Milliseconds(), "jitter": jit.Milliseconds()}
		}}}
}
