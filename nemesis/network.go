package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/sleep"
)

// toxicFault adds one toxic to a set of proxied paths and removes it at heal:
// the shape shared by latency, partition and lost-reply.
type toxicFault struct {
	name      string
	toxic     string // toxiproxy toxic type
	direction string // up, down or both
	toxicity  float32
	attrs     func(t *Target) toxiclient.Attributes
	// pick chooses the paths to hit and describes them.
	pick func(t *Target, rng *rand.Rand) ([]*cluster.Path, string)
	// all: the fault hits every client (latency with LatencyAll).
	all bool

	applied []applied
}

type applied struct {
	path *cluster.Path
	name string
}

func (f *toxicFault) Name() string { return f.name }

// dropAll is the attributes of a timeout toxic that drops every byte and
// never closes the connection: a partition, as the peers see one.
func dropAll(*Target) toxiclient.Attributes { return toxiclient.Attributes{"timeout": 0} }

// cutLinks is a fault that drops, both ways, everything on the paths paths
// returns when it starts. A dropped stream rather than a closed link: a
// replica keeps its link "up" (Sentinel and the cluster still count it as a
// candidate) and receives nothing new.
func cutLinks(name string, paths func() []*cluster.Path) *toxicFault {
	return &toxicFault{name: name, toxic: "timeout", direction: "both", toxicity: 1, attrs: dropAll,
		pick: func(*Target, *rand.Rand) ([]*cluster.Path, string) { return paths(), "" }}
}

func (f *toxicFault) Available(t *Target) error {
	if t.Network == nil {
		return errors.New("needs the toxiproxy network")
	}
	switch f.direction {
	case "up", "down", "both":
	default:
		return fmt.Errorf("direction %q: want up, down or both", f.direction)
	}
	return nil
}

func streams(direction string) []string {
	switch direction {
	case "up":
		return []string{"upstream"}
	case "down":
		return []string{"downstream"}
	}
	return []string{"upstream", "downstream"}
}

func (f *toxicFault) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	paths, what := f.pick(t, rng)
	if len(paths) == 0 {
		return errors.New("no path to act on")
	}
	f.applied = nil
	for _, p := range paths {
		for _, s := range streams(f.direction) {
			name := fmt.Sprintf("%s-%s", f.name, s)
			if _, err := p.Proxy.AddToxic(name, f.toxic, s, f.toxicity, f.attrs(t)); err != nil {
				_ = f.Heal(ctx, t)
				return fmt.Errorf("add %s toxic to %s->%s: %w", f.toxic, p.From, p.To, err)
			}
			f.applied = append(f.applied, applied{p, name})
		}
	}
	mark.Began(what + " (" + f.direction + ")")
	return nil
}

func (f *toxicFault) Heal(ctx context.Context, t *Target) error {
	var errs []error
	for _, a := range f.applied {
		if err := a.path.Proxy.RemoveToxic(a.name); err != nil {
			errs = append(errs, fmt.Errorf("remove toxic %s from %s->%s: %w", a.name, a.path.From, a.path.To, err))
		}
	}
	f.applied = nil
	return errors.Join(errs...)
}

// clientNodes lists the upstream addresses clients talk to, sorted.
func clientNodes(t *Target) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range t.Network.Paths("", "") {
		if strings.HasPrefix(p.From, "c") && !seen[p.To] {
			seen[p.To] = true
			out = append(out, p.To)
		}
	}
	sort.Strings(out)
	return out
}

func clientPaths(t *Target, to string) []*cluster.Path {
	var out []*cluster.Path
	for _, p := range t.Network.Paths("", to) {
		if strings.HasPrefix(p.From, "c") {
			out = append(out, p)
		}
	}
	return out
}

// nodeName names an address after its node when the topology knows it.
func nodeName(t *Target, addr string) string {
	if t.Topology != nil {
		for _, n := range t.Topology.Nodes() {
			if n.Addr() == addr {
				return n.Name
			}
		}
	}
	return addr
}

// everyClientToOneNode picks one node and every client's path to it.
func everyClientToOneNode(t *Target, rng *rand.Rand) ([]*cluster.Path, string) {
	nodes := clientNodes(t)
	if len(nodes) == 0 {
		return nil, ""
	}
	to := nodes[rng.Intn(len(nodes))]
	return clientPaths(t, to), "all clients <-> " + nodeName(t, to)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// newLatency delays traffic between one client (or every client) and one
// node. Latency above the TTL on acquire replies is the seed's 2.5 s acquire
// under a 2 s TTL: a lock that does not measure its acquire believes a lease
// that has already expired, while a faster client takes the key.
//
// Aimed (the default), it lands on a client's acquire attempt about to be
// sent while no client holds the key, the attempt that wins: the toxic is
// on that client's paths to every node before its command goes out (every
// client's, with LatencyAll), so the reply of that very command comes late.
type latency struct{ *toxicFault }

// Aims implements Aiming.
func (latency) Aims() bool { return true }

func (f latency) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	if !t.aiming() || t.Clients == nil || t.Clients.Count() == 0 {
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
	return latency{&toxicFault{name: "latency", all: o.Bool("latency-all"), toxic: "latency", direction: orDefault(o.String("direction"), "down"), toxicity: 1,
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

// oneClientToOneNode picks one client and its path to one node.
func oneClientToOneNode(t *Target, rng *rand.Rand) ([]*cluster.Path, string) {
	nodes := clientNodes(t)
	if len(nodes) == 0 || t.Clients == nil || t.Clients.Count() == 0 {
		return nil, ""
	}
	c := ClientName(rng.Intn(t.Clients.Count()))
	to := nodes[rng.Intn(len(nodes))]
	return t.Network.Paths(c, to), c + " <-> " + nodeName(t, to)
}

// partition cuts one client off from one node: its bytes are dropped (the
// connection stays open, as in a real partition, so the client waits for its
// timeout). A watchdog cut off this way cannot renew while its work goes on.
//
// Aimed (the default), the client is cut right after one of its acquires
// (the step chosen from the seed), before its work begins: the holder is the
// one cut off, not a client that happened to be waiting. The node is seeded
// as when blind.
type partition struct{ *toxicFault }

func newPartition(o Options) Fault {
	return partition{&toxicFault{name: "partition", toxic: "timeout", direction: orDefault(o.String("direction"), "both"), toxicity: 1,
		attrs: dropAll, pick: oneClientToOneNode}}
}

// Aims implements Aiming.
func (partition) Aims() bool { return true }

func (f partition) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	nodes := clientNodes(t)
	if !t.aiming() || t.Clients == nil || t.Clients.Count() == 0 || len(nodes) == 0 {
		return f.toxicFault.Start(ctx, t, rng, mark)
	}
	to := nodes[rng.Intn(len(nodes))]
	fl := Filter{Kind: Acquired, Client: rng.Intn(t.Clients.Count()), Skip: aimSkip(rng)}
	return f.aimToxic(ctx, t, fl, mark, func(e ProtocolEvent) ([]*cluster.Path, string) {
		c := ClientName(e.Client)
		return t.Network.Paths(c, to), c + " <-> " + nodeName(t, to)
	})
}

// lostReply drops every reply from one node for short bursts, again and
// again while it is active: a command sent during a burst runs on Redis but
// its client never hears back. The bursts are shorter than a client's read
// timeout, so go-redis's own retry (on by default) replays the command on a
// fresh connection: a SET NX that already succeeded now answers "not
// acquired" (an orphaned lock, reported as spurious-failure), and a DEL
// replayed after the key changed hands deletes the next holder's lock.
type lostReply struct {
	toxicFault
	burst, gap time.Duration

	stop context.CancelFunc
	done chan struct{}
}

func newLostReply(o Options) Fault {
	rate := o.Float("lost-reply-rate")
	if rate <= 0 || rate > 1 {
		rate = 0.2
	}
	burst := 20 * time.Millisecond
	return &lostReply{
		toxicFault: toxicFault{name: "lost-reply", toxic: "timeout", direction: orDefault(o.String("direction"), "down"),
			toxicity: 1, pick: everyClientToOneNode,
			attrs: dropAll},
		burst: burst,
		gap:   time.Duration(float64(burst) * (1 - rate) / rate),
	}
}

// Start picks the node and begins the bursts.
func (f *lostReply) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	paths, what := everyClientToOneNode(t, rng)
	if len(paths) == 0 {
		return errors.New("no path to act on")
	}
	f.pick = func(*Target, *rand.Rand) ([]*cluster.Path, string) { return paths, what }
	bctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	f.stop, f.done = stop, make(chan struct{})
	brng := rand.New(rand.NewSource(rng.Int63()))
	aim := t.aiming() && t.Clients != nil && t.Clients.Count() > 0
	if aim {
		what += ", each burst on an acquire or release in flight"
		aimed(mark, Aim{Client: -1, Step: "acquires and releases in flight"})
	}
	mark.Began(fmt.Sprintf("%s (%s, bursts of %v)", what, f.direction, f.burst))
	go func() {
		defer close(f.done)
		for {
			if aim {
				// The burst begins as a client is about to send an
				// acquire or a release to the node.
				fl := inFlight(brng, -1)
				if fl.Kind == Acquiring {
					// The attempt that wins: its SET runs, its ok is
					// lost, and a replayed SET NX finds its own key.
					fl = Filter{Kind: Point, Points: []string{"attempt"}, Client: -1, Free: true}
				}
				fl.Skip = 0
				if _, err := t.Protocol.Next(bctx, f.burstOn(bctx, t, fl, paths)); err != nil {
					return
				}
			} else if err := f.toxicFault.Start(bctx, t, brng, quiet{}); err != nil {
				return
			}
			sleep.For(bctx, f.burst)
			_ = f.toxicFault.Heal(context.WithoutCancel(bctx), t)
			if !sleep.For(bctx, jitter(brng, f.gap)) {
				return
			}
		}
	}()
	return nil
}

// burstOn returns fl with an Act that drops the replies on the paths to the
// node of the client at the step.
func (f *lostReply) burstOn(ctx context.Context, t *Target, fl Filter, paths []*cluster.Path) Filter {
	fl.Act = func(e ProtocolEvent) {
		var mine []*cluster.Path
		for _, p := range paths {
			if p.From == ClientName(e.Client) {
				mine = append(mine, p)
			}
		}
		f.toxicFault.pick = func(*Target, *rand.Rand) ([]*cluster.Path, string) { return mine, "" }
		_ = f.toxicFault.Start(ctx, t, nil, quiet{})
	}
	return fl
}

// Aims implements Aiming: false, the fault stays on for its time, but each
// burst, aimed, lands on an acquire attempt sent while nobody holds the key
// (the one that wins) or, one time in three, on a release.
func (f *lostReply) Aims() bool { return false }

// Heal stops the bursts and removes the toxic.
func (f *lostReply) Heal(ctx context.Context, t *Target) error {
	if f.stop == nil {
		return nil
	}
	f.stop()
	<-f.done
	f.stop = nil
	return f.toxicFault.Heal(ctx, t)
}
