package main

import (
	"context"
	"fmt"
	"math/rand"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/settings"
)

// flushKeys is an operator's FLUSHALL mid-run: every live lock vanishes while
// its holder still works, so the next client walks in within the lease. Its
// own setting, flush-mode, is a flag of torture-outside run and a key of its
// specs, declared here and nowhere else.
var flushKeys = nemesis.Entry{Name: "flush-keys",
	Summary:  "outside example: FLUSHALL on every redis-server (sync or async, --flush-mode)",
	Settings: []settings.Setting{flushMode},
	New:      func(o nemesis.Options) nemesis.Fault { return flush{mode: o.String("flush-mode")} }}

var flushMode = settings.Setting{Name: "flush-mode", Kind: settings.String, Choices: []string{"sync", "async"},
	Default: "sync", Help: "how flush-keys flushes: FLUSHALL SYNC or ASYNC"}

type flush struct{ mode string }

func (flush) Name() string { return "flush-keys" }

func (flush) Available(t *nemesis.Target) error {
	if t.Topology == nil || len(t.Topology.Nodes()) == 0 {
		return fmt.Errorf("needs redis-server processes the harness started")
	}
	return nil
}

func (f flush) Start(ctx context.Context, t *nemesis.Target, _ *rand.Rand, mark nemesis.Marker) error {
	mode := f.mode
	if mode == "" {
		mode = "sync"
	}
	for _, n := range t.Topology.Nodes() {
		c := redis.NewClient(&redis.Options{Addr: n.Addr(), DisableIdentity: true, Protocol: 2})
		flush := c.FlushAllAsync
		if mode == "sync" {
			flush = c.FlushAll
		}
		err := flush(ctx).Err()
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("flush %s: %w", n.Name, err)
		}
	}
	mark.Began("every node, " + mode)
	return nil
}

func (flush) Heal(context.Context, *nemesis.Target) error { return nil }
