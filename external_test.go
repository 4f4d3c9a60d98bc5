package locktorture_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/settings"
)

// TestExternalBackend runs locks against a redis-server the test starts by
// hand, as a user's own: set-px breaks (foreign release), token under
// latency holds (the latency goes through the run's Toxiproxy in front of
// the server), the run's keys all carry its prefix and are gone at its end,
// and the keys the server held before, one named like a lock key, are
// untouched. Faults that must control the server are refused in one line.
func TestExternalBackend(t *testing.T) {
	needRedis(t)
	ctx := context.Background()
	srv, err := cluster.StartLocal(ctx, 1, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	addr := srv.Nodes()[0].Addr()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	before := map[string]string{"lock:0": "the user's own lock:0", "user:1": "ada", "sale:0:0:stock": "7"}
	for k, v := range before {
		if err := c.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.HSet(ctx, "profile", "name", "ada").Err(); err != nil {
		t.Fatal(err)
	}
	external := func(lock string, seed int64) locktorture.Options {
		o := short(lock, seed)
		o.Backend, o.Redis = locktorture.BackendExternal, []string{addr}
		return o
	}
	overrun := external("set-px", 1)
	overrun.Overrun = 0.2
	latency := external("token", 4)
	latency.Faults, latency.NemesisInterval = []string{"latency"}, 500*time.Millisecond
	latency.Settings = settings.Values{"latency": 50 * time.Millisecond}
	cases := []struct {
		name string
		opts locktorture.Options
		expect
	}{
		{"set-px overrun: foreign release", overrun,
			expect{verdict: checker.Invalid, want: []checker.Kind{checker.KindForeignRelease}}},
		{"token under latency holds", latency, expect{verdict: checker.Valid}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.RunID = "ext-" + strings.ReplaceAll(tc.opts.Lock, "-", "")
			res := run(t, tc.opts)
			tc.check(t, res)
			prefix := "locktorture:" + tc.opts.RunID + ":"
			for _, e := range loadHistory(t, res.Dir).Events {
				if e.Op == history.Acquire && !strings.HasPrefix(e.Key, prefix) {
					t.Fatalf("acquire of key %q: want every key under %q", e.Key, prefix)
				}
			}
			keys, err := c.Keys(ctx, "*"+prefix+"*").Result()
			if err != nil || len(keys) > 0 {
				t.Errorf("keys of the run left on the server: %v (%v)", keys, err)
			}
		})
	}
	for k, v := range before {
		if got, err := c.Get(ctx, k).Result(); got != v {
			t.Errorf("the user's key %s: %q (%v), want %q untouched", k, got, err, v)
		}
	}
	if got := c.HGet(ctx, "profile", "name").Val(); got != "ada" {
		t.Errorf("the user's hash: %q, want untouched", got)
	}
	if n := c.DBSize(ctx).Val(); n != int64(len(before)+1) {
		t.Errorf("the server holds %d keys after the runs, want the user's %d", n, len(before)+1)
	}

	t.Run("faults that control the server are refused", func(t *testing.T) {
		o := external("token", 1)
		o.Faults, o.OutDir = []string{"crash-redis"}, t.TempDir()
		_, err := locktorture.Run(ctx, o)
		if err == nil || !locktorture.IsUsage(err) || !strings.Contains(err.Error(), "user's own") ||
			strings.Contains(err.Error(), "\n") {
			t.Fatalf("crash-redis on a user's server: %v; want a one-line usage error saying why", err)
		}
	})
}

// TestBackendOptions: bad backend options are one-line usage errors.
func TestBackendOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*locktorture.Options)
		want string
	}{
		{"unknown backend", func(o *locktorture.Options) { o.Backend = "k8s" }, `--backend "k8s"`},
		{"external without servers", func(o *locktorture.Options) { o.Backend = "external" }, "--redis"},
		{"servers without external", func(o *locktorture.Options) { o.Redis = []string{"127.0.0.1:1"} }, "--backend external"},
		{"bad address", func(o *locktorture.Options) { o.Backend, o.Redis = "external", []string{"nohost"} }, "host:port"},
		{"single with two servers", func(o *locktorture.Options) {
			o.Backend, o.Redis = "external", []string{"127.0.0.1:1", "127.0.0.1:2"}
		}, "one server"},
		{"sentinel without sentinels", func(o *locktorture.Options) {
			o.Backend, o.Topology, o.Redis = "external", "sentinel", []string{"127.0.0.1:1"}
		}, "--sentinel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := locktorture.DefaultOptions()
			tc.edit(&o)
			err := o.Validate()
			if err == nil || !locktorture.IsUsage(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a usage error mentioning %q", err, tc.want)
			}
		})
	}
}
