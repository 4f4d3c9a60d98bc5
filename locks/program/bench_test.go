package program_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/testredis"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/locks/program"
)

// BenchmarkExecToken8x8 sets the reference client (token out of process,
// over the lock protocol) beside in-process token in the same iteration: a
// fault-free run of 8 clients on 8 keys with zero hold each, as
// BenchmarkRunToken8x8. "%token" is exec-token's lock operations per second
// against token's, over all iterations. Each iteration is two 5 s runs:
// -benchtime 3x evens out a noisy machine.
func BenchmarkExecToken8x8(b *testing.B) {
	testredis.Need(b)
	ops := map[string]float64{} // lock ops/s summed over the iterations
	for i := 0; i < b.N; i++ {
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
			ops[lock] += res.Stats.OpsPerSec
		}
	}
	n := float64(b.N)
	b.ReportMetric(ops["token"]/n, "token-lockops/s")
	b.ReportMetric(ops["exec-token"]/n, "exec-token-lockops/s")
	b.ReportMetric(100*ops["exec-token"]/ops["token"], "%token")
}

// BenchmarkRedisPyVsRaw sets the redis-py lock program beside its yardstick
// in the same iteration: a fault-free run of 8 clients on 8 keys with zero
// hold, then 8 processes of python/raw_loop.py (redis-py's own Lock in a
// plain loop, no harness) on a server of their own for as long, making the
// calls the program makes with the same arguments: the run's wait (the
// TTL) and the fixed pause the program gives redis-py (the hello's
// max_ms). "%raw" is the program's lock operations per second against the
// raw loop's: how much of its own language's speed a Python lock keeps
// under the harness. "%raw-once" sets it against a loop that never waits
// (one attempt an acquire), which a contended key costs nothing: the
// harder yardstick. Run with -benchtime 1x: each iteration is three 5 s
// runs.
func BenchmarkRedisPyVsRaw(b *testing.B) {
	needPython(b)
	py, err := program.FindPython()
	if err != nil {
		b.Fatal(err)
	}
	const clients, keys, secs, ttl = 8, 8, 5, time.Second
	var prog, raw, once float64 // lock ops/s summed over the iterations
	for i := 0; i < b.N; i++ {
		res, err := locktorture.Run(context.Background(), locktorture.Options{
			Lock: "redis-py", Clients: clients, Keys: keys, Duration: secs * time.Second, TTL: ttl, Seed: int64(i + 1),
		})
		if err != nil {
			b.Fatal(err)
		}
		if res.Verdict != "valid" {
			b.Fatalf("fault-free redis-py run: %s %v", res.Verdict, res.Report.Count)
		}
		// The run's defaults: wait the TTL, pace by the default retry delay.
		prog += res.Stats.OpsPerSec
		raw += rawLoop(b, py, clients, keys, secs, ttl, ttl, locks.DefaultRetryDelay(ttl))
		once += rawLoop(b, py, clients, keys, secs, ttl, 0, 0)
	}
	b.ReportMetric(prog/float64(b.N), "redis-py-lockops/s")
	b.ReportMetric(raw/float64(b.N), "raw-lockops/s")
	b.ReportMetric(100*prog/raw, "%raw")
	b.ReportMetric(100*prog/once, "%raw-once")
}

// rawLoop runs n processes of python/raw_loop.py against a fresh
// redis-server for secs seconds and returns their lock operations per
// second, summed. A zero wait makes each acquire one attempt.
func rawLoop(b *testing.B, py string, n, keys, secs int, ttl, wait, pause time.Duration) float64 {
	b.Helper()
	topo, _ := testredis.Topology(b, "single", cluster.TopologyOptions{})
	addr := topo.Nodes()[0].Addr()
	outs := make([]bytes.Buffer, n)
	cmds := make([]*exec.Cmd, n)
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	for p := range cmds {
		cmds[p] = exec.Command(py, "python/raw_loop.py", addr, strconv.Itoa(secs), strconv.Itoa(keys), ms(ttl),
			strconv.Itoa(p+1), ms(wait), ms(pause))
		cmds[p].Stdout, cmds[p].Stderr = &outs[p], os.Stderr
		if err := cmds[p].Start(); err != nil {
			b.Fatal(err)
		}
	}
	var ops float64
	for p, c := range cmds {
		if err := c.Wait(); err != nil {
			b.Fatalf("raw loop %d: %v", p, err)
		}
		var r struct{ Ops float64 }
		if err := json.Unmarshal(outs[p].Bytes(), &r); err != nil {
			b.Fatalf("raw loop %d printed %q: %v", p, outs[p].String(), err)
		}
		ops += r.Ops
	}
	return ops / float64(secs)
}
