package locktorture_test

import (
	"context"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
)

// BenchmarkRunToken8x8 measures the harness's own throughput: a fault-free
// token run, 8 clients on 8 keys with zero hold, every operation recorded
// and checked live. Compare its lockops/s with redis-benchmark -c 8 on the
// same machine (each lock operation is one Redis round trip when granted at
// once). Run with -benchtime 1x: each iteration is a 5 s run. Clients that
// meet a held key wait the lock's retry pacing (a twentieth of the TTL by
// default, 50 ms here), which bounds a contended run more than the harness
// does: retry=1ms takes most of that wait out.
func BenchmarkRunToken8x8(b *testing.B) {
	needRedis(b)
	for _, bc := range []struct {
		name  string
		retry time.Duration
	}{{"retry=default", 0}, {"retry=1ms", time.Millisecond}} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
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
			}
		})
	}
}
