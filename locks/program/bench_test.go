package program_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/clustertest"
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
	clustertest.Need(b)
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
	topo, _ := clustertest.Topology(b, "single", cluster.TopologyOptions{})
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

// BenchmarkRedisPyCeiling measures what the program path costs a redis-py
// lock on the program's own side, with no harness at all: one process of
// the redis-py program driven over its pipes by a bare loop in this
// benchmark (hello, then acquire and release of one key, one after the
// other, in a run without faults, so no go lines), against one process of
// python/raw_loop.py making the same calls without the protocol (one
// attempt an acquire, never contended). "program-cpu-us/op" and
// "raw-cpu-us/op" are each Python process's CPU time (its rusage, start-up
// included in both) per lock operation; "%ceiling" is raw's over the
// program's: the share of its own language's speed a lock program could
// keep where its clients keep the machine's cores busy, even if the
// harness's side of each pipe cost nothing. Run with -benchtime 1x.
func BenchmarkRedisPyCeiling(b *testing.B) {
	needPython(b)
	py, err := program.FindPython()
	if err != nil {
		b.Fatal(err)
	}
	src := ""
	for _, f := range []string{"python/lockproto.py", "python/routes.py", "python/redis_py.py"} {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		src += string(data) + "\n"
	}
	const secs = 3
	var progCPU, rawCPU time.Duration
	var progOps, rawOps float64
	for i := 0; i < b.N; i++ {
		topo, _ := clustertest.Topology(b, "single", cluster.TopologyOptions{})
		addr := topo.Nodes()[0].Addr()
		ops, cpu := driveBare(b, exec.Command(py, "-c", src), addr, secs*time.Second)
		progOps, progCPU = progOps+ops, progCPU+cpu
		raw := exec.Command(py, "python/raw_loop.py", addr, strconv.Itoa(secs), "1", "1000", "1")
		var out bytes.Buffer
		raw.Stdout, raw.Stderr = &out, os.Stderr
		if err := raw.Run(); err != nil {
			b.Fatalf("raw loop: %v", err)
		}
		var r struct{ Ops float64 }
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			b.Fatalf("raw loop printed %q: %v", out.String(), err)
		}
		rawOps, rawCPU = rawOps+r.Ops, rawCPU+raw.ProcessState.UserTime()+raw.ProcessState.SystemTime()
	}
	perOp := func(cpu time.Duration, ops float64) float64 { return float64(cpu.Microseconds()) / ops }
	b.ReportMetric(perOp(progCPU, progOps), "program-cpu-us/op")
	b.ReportMetric(perOp(rawCPU, rawOps), "raw-cpu-us/op")
	b.ReportMetric(100*perOp(rawCPU, rawOps)/perOp(progCPU, progOps), "%ceiling")
}

// driveBare plays the harness's side of the protocol as plainly as it can
// be played, for d: one key, acquire then release, nothing recorded. It
// returns the lock operations made and the program's CPU time.
func driveBare(b *testing.B, cmd *exec.Cmd, addr string, d time.Duration) (float64, time.Duration) {
	b.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	next := func(want string) {
		for lines.Scan() {
			var m struct{ Type string }
			if json.Unmarshal(lines.Bytes(), &m) == nil && m.Type == want {
				return
			}
		}
		b.Fatalf("the program ended before its %s: %v", want, lines.Err())
	}
	hello, _ := json.Marshal(program.Hello{Type: "hello", Protocol: program.Version, Topology: "single",
		Addrs: []string{addr}, TTLMs: 1000, Retry: program.Retry{FirstMs: 1, MaxMs: 50, Jitter: 0.5}, Seed: 1})
	fmt.Fprintf(stdin, "%s\n", hello)
	next("hello")
	var ops float64
	for id, end := 1, time.Now().Add(d); time.Now().Before(end); id += 2 {
		fmt.Fprintf(stdin, `{"type":"acquire","id":%d,"key":"lock:0","token":"t%d"}`+"\n", id, id)
		next("reply")
		fmt.Fprintf(stdin, `{"type":"release","id":%d,"key":"lock:0","token":"t%d"}`+"\n", id+1, id)
		next("reply")
		ops += 2
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("redis-py program: %v", err)
	}
	return ops, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}
