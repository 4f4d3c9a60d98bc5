package program_test

import (
	"context"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/internal/testredis"
)

// BenchmarkExecToken8x8 sets the reference client (token out of process,
// over the lock protocol) beside in-process token in the same iteration: a
// fault-free run of 8 clients on 8 keys with zero hold each, as
// BenchmarkRunToken8x8. "%token" is exec-token's lock operations per second
// against token's. Run with -benchtime 1x: each iteration is two 5 s runs.
func BenchmarkExecToken8x8(b *testing.B) {
	testredis.Need(b)
	for i := 0; i < b.N; i++ {
		ops := map[string]float64{}
		for _, lock := range []string{"token", "exec-token"} {
			res, err := locktorture.Run(context.Background(), locktorture.Options{
				Lock: lock, Clients: 8, Keys: 8, Duration: 5 * time.Second, TTL: time.Second, Seed: int64(i + 1),
			})
			if err != nil {
				b.Fatal(err)
			}
			if res.Verdict != "valid" {
				b.Fatalf("fault-free %s run: %s %v", lock, res.Verdict, res.Report.Count)
			}
			ops[lock] = res.Stats.OpsPerSec
		}
		b.ReportMetric(ops["token"], "token-lockops/s")
		b.ReportMetric(ops["exec-token"], "exec-token-lockops/s")
		b.ReportMetric(100*ops["exec-token"]/ops["token"], "%token")
	}
}
