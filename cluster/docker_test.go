package cluster

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/internal/needdocker"
)

func startDocker(t *testing.T) *Docker {
	t.Helper()
	needdocker.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := NewDocker(ctx, DockerOptions{RunID: "cluster-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
		assertNoLeftovers(t, d.Run())
	})
	return d
}

// assertNoLeftovers checks with the docker CLI, as a user would, that
// nothing labelled with run is left.
func assertNoLeftovers(t *testing.T, run string) {
	t.Helper()
	for _, args := range [][]string{
		{"ps", "-a", "-q", "--filter", "label=" + LabelRun + "=" + run},
		{"network", "ls", "-q", "--filter", "label=" + LabelRun + "=" + run},
	} {
		out, err := exec.Command("docker", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %v: %v: %s", args, err, out)
		}
		if s := strings.TrimSpace(string(out)); s != "" {
			t.Errorf("docker %s: run %s left %s", strings.Join(args[:2], " "), run, s)
		}
	}
}

// TestDockerNodeFaults: a container node answers on its published port,
// stops answering while paused, comes back empty after a kill without
// persistence and with its keys after one with AOF always.
func TestDockerNodeFaults(t *testing.T) {
	d := startDocker(t)
	ctx := context.Background()
	tests := []struct {
		persistence Persistence
		keeps       bool
	}{
		{PersistNone, false},
		{PersistAlways, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.persistence), func(t *testing.T) {
			l, err := NewLocal(Options{Backend: d, Persistence: tc.persistence})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			n, err := l.StartNode(ctx, "n-"+string(tc.persistence), nil)
			if err != nil {
				t.Fatal(err)
			}
			if n.Backend() != "docker" || n.Pid() == 0 || n.Dir != "" {
				t.Fatalf("node: backend %q pid %d dir %q", n.Backend(), n.Pid(), n.Dir)
			}
			c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, ReadTimeout: 300 * time.Millisecond})
			defer c.Close()
			if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := n.Pause(); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(ctx, "k").Err(); err == nil {
				t.Fatal("a paused container answered")
			}
			if err := n.Resume(); err != nil {
				t.Fatal(err)
			}
			c.Close()
			c = redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
			if err := n.Kill(); err != nil {
				t.Fatal(err)
			}
			if n.Pid() != 0 {
				t.Fatal("a killed container still has a pid")
			}
			if err := n.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := c.Get(ctx, "k").Result()
			switch {
			case tc.keeps && got != "v":
				t.Fatalf("after restart with AOF: %q, %v; want the key kept", got, err)
			case !tc.keeps && err != redis.Nil:
				t.Fatalf("after restart without persistence: %q, %v; want an empty server", got, err)
			}
		})
	}
}
