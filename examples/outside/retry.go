package main

import (
	"context"
	"errors"
	"time"

	"github.com/locktorture/locktorture/locks"
)

// What the example locks share with any lock written against locks.Config:
// reporting their protocol points to the harness, and retrying an acquire
// the way the harness paces it.

// step reports the protocol point to the harness's hooks, when it set any,
// so that its client faults can stop or kill the client there.
func step(ctx context.Context, cfg locks.Config, point string) error {
	if cfg.Hooks.Step == nil {
		return ctx.Err()
	}
	return cfg.Hooks.Step(ctx, point)
}

// retryAcquire calls attempt until it takes the lock or fails, pausing
// after each miss as cfg paces it (RetryDelayAt), and gives up with
// locks.ErrNotAcquired once the next pause would end past cfg.Wait.
func retryAcquire(ctx context.Context, cfg locks.Config, attempt func() (bool, error)) error {
	deadline := time.Now().Add(cfg.Wait)
	for n := 1; ; n++ {
		if ok, err := attempt(); ok || err != nil {
			return err
		}
		d := cfg.RetryDelayAt(n)
		if time.Now().Add(d).After(deadline) {
			return locks.ErrNotAcquired
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return errors.Join(locks.ErrNotAcquired, ctx.Err())
		}
	}
}
