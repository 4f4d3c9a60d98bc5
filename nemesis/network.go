// The toxiproxy machinery the network faults share: toxicFault, which puts
// one toxic on a set of proxied paths and takes it off at heal, and the
// pickers that choose those paths. The faults themselves (latency,
// partition, lost-reply, the replication cuts) each have a file of their own.

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"

	"github.com/locktorture/locktorture/cluster"
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
