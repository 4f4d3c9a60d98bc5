package locktorture_test

import (
	"context"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
)

// BenchmarkRunToken8x8 measures the harness's own throughput: a fault-free
// token run, 8 clients on 8 keys with zero hold, every operation recorded
// and checked. Compare its ops/s with redis-benchmark -c 8 -t set on the same
// machine (each lock operation here is one or two Redis round trips through
// a Toxiproxy proxy). Run with -benchtime 1x: each iteration is a 5 s run.
func BenchmarkRunToken8x8(b *testing.B) {
	needRedis(b)
	for i := 0; i < b.N; i++ {
		res, err := locktorture.Run(context.Background(), locktorture.Options{
			Lock: "token", Clients: 8, Keys: 8, Duration: 5 * time.Second, TTL: time.Second,
			Seed: int64(i + 1),
		})
		if err != nil {
			b.Fatal(err)
		}
		if res.Verdict != "valid" {
			b.Fatalf("fault-free token run: %s %v", res.Verdict, res.Report.Count)
		}
		b.ReportMetric(res.Stats.OpsPerSec, "lockops/s")
		b.ReportMetric(float64(res.Stats.Acquired)/res.Stats.Duration.Seconds(), "acquires/s")
	}
}
