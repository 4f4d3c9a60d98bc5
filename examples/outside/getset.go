package main

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/locks"
)

// getThenSet is the lock a team writes before it has read about SET NX: it
// looks whether the key is free, then writes it. Two clients that both look
// before either writes both take the lock, within the lease: the matrix cell
// get-then-set-none expects exactly that double holder.
var getThenSet = locks.Entry{Name: "get-then-set",
	Summary: "outside example: GET the key, SET it with a TTL if it was empty (check-then-act race)",
	New:     newGetThenSet}

type getSet struct{ cfg locks.Config }

func newGetThenSet(cfg locks.Config) (locks.Lock, error) {
	if len(cfg.Nodes) == 0 {
		return nil, errors.New("get-then-set needs a redis node")
	}
	return &getSet{cfg: cfg}, nil
}

func (l *getSet) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	c := l.cfg.Nodes[0]
	token := l.cfg.NewToken()
	err := locks.Retry(ctx, l.cfg, func(ctx context.Context) (bool, error) {
		if err := l.cfg.Hooks.Reach(ctx, "get"); err != nil {
			return false, err
		}
		if _, err := c.Get(ctx, key).Result(); !errors.Is(err, redis.Nil) {
			return false, err // taken (nil: try again), or a failure
		}
		if err := l.cfg.Hooks.Reach(ctx, "set"); err != nil {
			return false, err
		}
		return true, c.Set(ctx, key, token, l.cfg.TTL).Err()
	})
	if err != nil {
		return nil, err
	}
	return &locks.Lease{Key: key, Token: token, TTL: l.cfg.TTL}, nil
}

// release deletes the key only while it still holds this lease's token.
var release = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

func (l *getSet) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	if err := l.cfg.Hooks.Reach(ctx, "release"); err != nil {
		return false, err
	}
	n, err := release.Run(ctx, l.cfg.Nodes[0], []string{lease.Key}, lease.Token).Int()
	return n == 1, err
}
