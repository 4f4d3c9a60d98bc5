package locktorture_test

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/cluster"
)

// BenchmarkRunToken8x8 measures the harness's own throughput: a fault-free
// token run, 8 clients on 8 keys with zero hold, every operation recorded
// and checked live. Each lock operation is one Redis round trip when it is
// granted at once, so the yardstick is redis-benchmark's SET NX PX with 8
// connections on 8 keys, measured in the same iteration on a server of the
// same build: the "%redis-benchmark" metric is lockops/s against it (when
// redis-benchmark is installed). The closer yardstick is rawLoop, go-redis
// alone doing the run's Redis work with nothing recorded or checked:
// "%raw-loop" is the share of it the harness keeps (the same client
// library and commands, so only the harness's own cost shows). Run with
// -benchtime 1x: each iteration is a 5 s run and a 5 s loop. retry=default is the lock's own pacing (a backoff from 1 ms);
// retry=1ms polls a held key every millisecond or so.
func BenchmarkRunToken8x8(b *testing.B) {
	needRedis(b)
	for _, bc := range []struct {
		name  string
		retry time.Duration
	}{{"retry=default", 0}, {"retry=1ms", time.Millisecond}} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				base, baseErr := redisBenchmarkSetNX(b)
				raw, rawErr := rawLoopRate(b, 5*time.Second)
				if rawErr != nil {
					b.Fatal(rawErr)
				}
				res, err := locktorture.Run(context.Background(), locktorture.Options{
					Lock: "token", Clients: 8, Keys: 8, Duration: 5 * time.Second, TTL: time.Second,
					RetryDelay: bc.retry, Seed: int64(i + 1),
				})
				if err != nil {
					b.Fatal(err)
				}
				if res.Verdict != "valid" {
					b.Fatalf("fault-free token run: %s %v", res.Verdict, res.Report.Count)
				}
				b.ReportMetric(res.Stats.OpsPerSec, "lockops/s")
				b.ReportMetric(float64(res.Stats.Acquired)/res.Stats.Duration.Seconds(), "acquires/s")
				b.ReportMetric(raw, "raw-loop-lockops/s")
				b.ReportMetric(100*res.Stats.OpsPerSec/raw, "%raw-loop")
				if baseErr != nil {
					b.Logf("no yardstick: %v", baseErr)
					continue
				}
				b.ReportMetric(base, "redis-benchmark-req/s")
				b.ReportMetric(100*res.Stats.OpsPerSec/base, "%redis-benchmark")
			}
		})
	}
}

var rpsLine = regexp.MustCompile(`([0-9.]+) requests per second`)

// redisBenchmarkSetNX runs redis-benchmark's SET NX PX, 8 connections on 8
// keys, against a fresh redis-server and returns its requests per second.
func redisBenchmarkSetNX(b *testing.B) (float64, error) {
	b.Helper()
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return 0, err
	}
	ctx := context.Background()
	srv, err := cluster.StartLocal(ctx, 1, cluster.Options{})
	if err != nil {
		return 0, fmt.Errorf("start redis for redis-benchmark: %w", err)
	}
	defer srv.Close()
	port := strconv.Itoa(srv.Nodes()[0].Port)
	out, err := exec.CommandContext(ctx, bin, "-p", port, "-c", "8", "-n", "200000", "-r", "8", "-q",
		"SET", "lock:__rand_int__", "v", "NX", "PX", "1000").Output()
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark: %w", err)
	}
	m := rpsLine.FindAllSubmatch(out, -1)
	if len(m) == 0 {
		return 0, fmt.Errorf("redis-benchmark printed no rate: %q", out)
	}
	return strconv.ParseFloat(string(m[len(m)-1][1]), 64)
}
