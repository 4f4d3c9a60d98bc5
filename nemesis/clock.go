// The libfaketime machinery the clock faults share: starting every
// redis-server under libfaketime and moving one node's wall clock. The
// faults themselves (clock_jump.go, clock_jump_partition.go) each have a
// file of their own.

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
)

// clockFile is the libfaketime timestamp file of a node, relative to the
// node's directory (redis-server's working directory): it holds the node's
// offset from real time, "+1.200" for 1.2 s ahead.
const clockFile = "faketime.offset"

// faketimeEnv returns a cluster.Options.Env that starts every server under
// libfaketime, reading its offset from its own clockFile on every clock
// call (FAKETIME_NO_CACHE), so that the offset can change while it runs. Only
// the wall clock moves: the monotonic clock the server uses for its event
// loop stays real, as in an NTP step. libc.so.6 is preloaded after
// libfaketime so that malloc is glibc's: Debian's redis-server is linked with
// jemalloc, whose initialisation calls clock_gettime, and libfaketime, whose
// own initialisation allocates, then recurses and the server hangs at start
// (libfaketime issue #130).
func faketimeEnv(lib string, prev func(node string) []string) func(node string) []string {
	return func(node string) []string {
		env := []string{"LD_PRELOAD=" + lib + ":libc.so.6", "FAKETIME_TIMESTAMP_FILE=" + clockFile,
			"FAKETIME_NO_CACHE=1", "FAKETIME_DONT_FAKE_MONOTONIC=1"}
		if prev != nil {
			env = append(env, prev(node)...)
		}
		return env
	}
}

// readOffset returns how far ahead a node's clock runs now.
func readOffset(ctx context.Context, n *cluster.Node) (time.Duration, error) {
	files, err := n.Files()
	if err != nil {
		return 0, err
	}
	b, err := files.ReadFile(ctx, clockFile)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read clock offset of %s: %w", n.Name, err)
	}
	s := strings.TrimPrefix(strings.TrimSpace(string(b)), "+")
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("clock offset of %s: %q: %w", n.Name, b, err)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// jumpClock moves the wall clock of n forward by d and checks that the
// server sees it: the keys it holds expire by its clock, so every key with
// less than d left is gone at once. It returns how far ahead the node now is.
func jumpClock(ctx context.Context, n *cluster.Node, d time.Duration) (time.Duration, error) {
	cur, err := readOffset(ctx, n)
	if err != nil {
		return 0, err
	}
	total := cur + d
	files, err := n.Files()
	if err != nil {
		return 0, err
	}
	if err := files.WriteFile(ctx, clockFile, []byte(fmt.Sprintf("+%.3f\n", total.Seconds()))); err != nil {
		return 0, fmt.Errorf("write clock offset of %s: %w", n.Name, err)
	}
	// Ask the server its time directly, not through a client's proxy.
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, DisableIdentity: true, PoolSize: 1,
		DialTimeout: time.Second, ReadTimeout: time.Second})
	defer c.Close()
	before := time.Now()
	now, err := c.Time(ctx).Result()
	if err != nil {
		return total, fmt.Errorf("read the clock of %s after the jump: %w", n.Name, err)
	}
	if ahead := now.Sub(before); ahead < total/2 {
		return total, fmt.Errorf("the clock of %s did not move (%v ahead, want %v): is it running under libfaketime?",
			n.Name, ahead.Round(time.Millisecond), total)
	}
	return total, nil
}
