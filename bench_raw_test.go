package locktorture_test

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
)

// rawRelease is the compare-and-delete a token lock's users write.
var rawRelease = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

// rawLoop is the harness's yardstick: what go-redis alone does with the
// same Redis work as a fault-free token run of the mutex workload (whose
// guarded counter lives in the harness's memory, not in Redis), with
// nothing recorded or checked. Each of clients goroutines picks one of
// keys at random, takes it with SET NX PX (a taken key is tried again
// after a millisecond, as the token lock's first backoff) and releases it
// with a Lua compare-and-delete. It returns lock operations (acquires and
// releases, as stats.ops counts them) per second.
func rawLoop(ctx context.Context, addr string, clients, keys int, d time.Duration) (float64, error) {
	var ops atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	for i := range clients {
		wg.Go(func() {
			c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 2})
			defer c.Close()
			r := rand.New(rand.NewSource(int64(i + 1)))
			for ctx.Err() == nil {
				if err := rawRound(ctx, c, r, keys); err != nil && ctx.Err() == nil {
					errs <- err
					return
				}
				ops.Add(2)
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return float64(ops.Load()) / time.Since(start).Seconds(), nil
}

// rawRound is one acquire and release of rawLoop.
func rawRound(ctx context.Context, c *redis.Client, r *rand.Rand, keys int) error {
	key := "lock:" + strconv.Itoa(r.Intn(keys))
	token := strconv.FormatUint(r.Uint64(), 36)
	for {
		ok, err := c.SetNX(ctx, key, token, time.Second).Result()
		if err != nil {
			return fmt.Errorf("raw loop: set %s: %w", key, err)
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return rawRelease.Run(ctx, c, []string{key}, token).Err()
}

// rawLoopRate runs rawLoop for d on a fresh redis-server of the build the
// harness runs on.
func rawLoopRate(b *testing.B, d time.Duration) (float64, error) {
	b.Helper()
	ctx := context.Background()
	srv, err := cluster.StartLocal(ctx, 1, cluster.Options{})
	if err != nil {
		return 0, fmt.Errorf("start redis for the raw loop: %w", err)
	}
	defer srv.Close()
	return rawLoop(ctx, srv.Nodes()[0].Addr(), 8, 8, d)
}
