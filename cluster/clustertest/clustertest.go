// Package clustertest starts what a test of faults or topologies stands on:
// the embedded Toxiproxy network and a topology of real redis-server
// processes, both stopped when the test ends.
package clustertest

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/locktorture/locktorture/cluster"
)

// Need skips t when one of bins (redis-server when none is named) is not
// installed, except in CI (CI set), which installs them all
// (scripts/install-deps.sh) and where a skip would hide a broken test:
// there it fails.
func Need(t testing.TB, bins ...string) {
	t.Helper()
	if len(bins) == 0 {
		bins = []string{"redis-server"}
	}
	for _, bin := range bins {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("CI is set but %s is not installed: scripts/install-deps.sh installs it", bin)
			}
			t.Skipf("%s not installed (scripts/install-deps.sh)", bin)
		}
	}
}

// Network starts the embedded Toxiproxy network, closed at the end of t.
func Network(t testing.TB) *cluster.Network {
	t.Helper()
	Need(t)
	netw, err := cluster.StartNetwork(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { netw.Close() })
	return netw
}

// Topology starts the built-in topology name on a network of its own (or
// opts.Network when set), both stopped at the end of t.
func Topology(t testing.TB, name string, opts cluster.TopologyOptions) (cluster.Topology, *cluster.Network) {
	t.Helper()
	if opts.Network == nil {
		opts.Network = Network(t)
	}
	topo, err := cluster.StartTopology(context.Background(), name, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { topo.Close() })
	return topo, opts.Network
}
