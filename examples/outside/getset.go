package main

import (
	"context"
	"errors"
	"time"

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
	deadline := time.Now().Add(l.cfg.Wait)
	for n := 1; ; n++ {
		if err := l.step(ctx, "get"); err != nil {
			return nil, err
		}
		_, err := c.Get(ctx, key).Result()
		switch {
		case errors.Is(err, redis.Nil):
			if err := l.step(ctx, "set"); err != nil {
				return nil, err
			}
			if err := c.Set(ctx, key, token, l.cfg.TTL).Err(); err != nil {
				return nil, err
			}
			return &locks.Lease{Key: key, Token: token, TTL: l.cfg.TTL}, nil
		case err != nil:
			return nil, err
		}
		d := l.cfg.RetryDelayAt(n)
		if time.Now().Add(d).After(deadline) {
			return nil, locks.ErrNotAcquired
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, errors.Join(locks.ErrNotAcquired, ctx.Err())
		}
	}
}

// release deletes the key only while it still holds this lease's token.
var release = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

func (l *getSet) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	if err := l.step(ctx, "release"); err != nil {
		return false, err
	}
	n, err := release.Run(ctx, l.cfg.Nodes[0], []string{lease.Key}, lease.Token).Int()
	return n == 1, err
}

func (l *getSet) step(ctx context.Context, point string) error {
	if l.cfg.Hooks.Step == nil {
		return ctx.Err()
	}
	return l.cfg.Hooks.Step(ctx, point)
}
