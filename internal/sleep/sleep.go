// Package sleep is the one way locktorture waits: for a duration, unless the
// run's context ends first.
package sleep

import (
	"context"
	"time"
)

// For waits d and reports true, or reports false as soon as ctx ends.
func For(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
