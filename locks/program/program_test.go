package program_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/locks/program"
)

// needPython skips a redis-py test where no interpreter imports redis,
// except in CI (CI set), which installs python3-redis and where a skip would
// hide a broken lock program.
func needPython(t testing.TB) {
	t.Helper()
	needInterpreter(t, program.FindPython)
}

// needDjango skips a test of the django-redis program where Debian's
// python3-django-redis is missing, except in CI, which installs it.
func needDjango(t testing.TB) {
	t.Helper()
	needInterpreter(t, func() (string, error) {
		py, err := program.FindPython()
		if err != nil {
			return "", err
		}
		if err := exec.Command(py, "-c", "import django_redis").Run(); err != nil {
			return "", fmt.Errorf("%s cannot import django_redis (python3-django-redis, scripts/install-deps.sh)", py)
		}
		return py, nil
	})
}

// needInterpreter skips a test of an in-tree program whose interpreter
// find does not find, except in CI, which installs it.
func needInterpreter(t testing.TB, find func() (string, error)) {
	t.Helper()
	clustertest.Need(t)
	if _, err := find(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but %v", err)
		}
		t.Skip(err)
	}
}

// short is a run of a few seconds with a short TTL, as the fault matrix's
// defaults.
func short(lock string, faults ...string) locktorture.Options {
	return locktorture.Options{Lock: lock, Faults: faults, Clients: 4, Keys: 1, Duration: 4 * time.Second,
		TTL: 300 * time.Millisecond, HoldMin: 5 * time.Millisecond, HoldMax: 30 * time.Millisecond, Seed: 1,
		NemesisInterval: time.Second, CheckTimeout: 30 * time.Second}
}

// programsOf lists the live processes a harness with pid marked as its lock
// programs.
func programsOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	mark := cluster.ProgramEnv + "=" + strconv.Itoa(pid)
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && strings.Contains("\x00"+string(b), "\x00"+mark+"\x00") {
			out = append(out, p)
		}
	}
	return out
}

func noneLeft(t *testing.T) {
	t.Helper()
	if left := programsOf(os.Getpid()); len(left) > 0 {
		t.Errorf("lock programs still running after the run: %v", left)
	}
}

type verdict struct {
	valid  bool
	want   checker.Kind
	class  checker.Class
	absent checker.Kind
}

func (v verdict) check(t *testing.T, res *locktorture.Result) {
	t.Helper()
	counts := res.Report.Count
	if v.valid && res.Verdict != checker.Valid {
		t.Errorf("verdict %s, want valid: %v", res.Verdict, counts)
	}
	if v.want != "" && counts[v.want] == 0 {
		t.Errorf("no %s; counts %v", v.want, counts)
	}
	if v.absent != "" && counts[v.absent] > 0 {
		t.Errorf("%d %s, want none", counts[v.absent], v.absent)
	}
	if v.class == "" {
		return
	}
	for _, a := range res.Report.Anomalies {
		if a.Kind == v.want && a.Class == v.class {
			return
		}
	}
	t.Errorf("no %s classed %s", v.want, v.class)
}

// verdictCase is a run of a lock program and the verdict it must reach.
type verdictCase struct {
	name string
	opts locktorture.Options
	verdict
}

func runCases(t *testing.T, cases []verdictCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.opts
			o.OutDir = t.TempDir()
			res, err := locktorture.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stats.Acquired == 0 {
				t.Fatalf("no acquire succeeded: %+v", res.Stats)
			}
			c.check(t, res)
			noneLeft(t)
		})
	}
}

// TestReferenceClient: the built-in token lock run out of process over the
// protocol gives token's verdicts, and no false alarm without faults.
func TestReferenceClient(t *testing.T) {
	clustertest.Need(t)
	latency := short("exec-token", "latency")
	latency.Clients, latency.HoldMin, latency.HoldMax, latency.Think = 2, 50*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond
	latency.Duration = 6 * time.Second
	overrun := short("exec-token")
	overrun.Overrun = 0.2
	pause := short("exec-token", "pause-client")
	pause.StopOnAnomaly = true
	runCases(t, []verdictCase{
		{"fault-free", short("exec-token"), verdict{valid: true}},
		{"overrun", overrun, verdict{want: checker.KindDoubleHolder, class: checker.ClassLeaseOutlived, absent: checker.KindForeignRelease}},
		{"pause-client", pause, verdict{want: checker.KindDoubleHolder, class: checker.ClassLeaseOutlived}},
		{"crash-client", short("exec-token", "crash-client"), verdict{valid: true}},
		{"latency", latency, verdict{want: checker.KindDoubleHolder}},
	})
}

// TestRedisPy puts redis-py's own Lock under the faults the issue names.
func TestRedisPy(t *testing.T) {
	needPython(t)
	overrun := short("redis-py")
	overrun.Overrun = 0.2
	extOverrun := short("redis-py-extend")
	extOverrun.Overrun = 0.2
	pause := short("redis-py", "pause-client")
	pause.StopOnAnomaly = true
	extPause := short("redis-py-extend", "pause-client")
	extPause.StopOnAnomaly = true
	runCases(t, []verdictCase{
		{"fault-free", short("redis-py"), verdict{valid: true}},
		{"overrun", overrun, verdict{want: checker.KindDoubleHolder, class: checker.ClassLeaseOutlived, absent: checker.KindForeignRelease}},
		{"pause-client", pause, verdict{want: checker.KindDoubleHolder}},
		{"crash-client", short("redis-py", "crash-client"), verdict{valid: true}},
		{"extend-overrun", extOverrun, verdict{valid: true}},
		{"extend-pause-client", extPause, verdict{want: checker.KindDoubleHolder}},
	})
}

// TestUntrustedPrograms: a program that breaks the protocol ends the run
// with one line naming the client, the line and what was expected; nothing
// is left running.
func TestUntrustedPrograms(t *testing.T) {
	clustertest.Need(t)
	cases := []struct {
		name, lock string
		want       []string
	}{
		{"no such command", "exec:/nonexistent/lock-program --x", []string{"client 0", "cannot start", "/nonexistent/lock-program"}},
		{"exits in the handshake", "exec:sh testdata/exit-in-hello.sh", []string{"client 0", "exit status 3", "giving up", "expected"}},
		{"wrong protocol", "exec:sh testdata/wrong-version.sh", []string{"client 0", "protocol 2", "expected protocol 1"}},
		{"exits mid-run", "exec:sh testdata/exit-mid-run.sh", []string{"client ", "misbehaving", "exit status 1", "expected"}},
		{"not JSON", "exec:sh testdata/not-json.sh", []string{"client ", `"granted!"`, "not a JSON object", "expected"}},
		{"reply to no request", "exec:sh testdata/reply-to-nothing.sh", []string{"client ", `"id\":999`, "reply to no request", "expected"}},
		{"unpromised fence", "exec:sh testdata/unpromised-fence.sh", []string{"client ", "fence", "did not promise"}},
		{"bad quoting", "exec:sh 'testdata/hang.sh", []string{"cannot split"}},
		{"a TTL it cannot set", "exec:sh testdata/whole-seconds.sh", []string{"whole-seconds", "--ttl 300ms", "ttl_granularity_ms", "1000ms"}},
		{"a topology it does not serve", "exec:sh testdata/wrong-topology.sh", []string{"single-only", "does not serve topology redlock", "it serves single"}},
		{"a key template without the key", "exec:sh testdata/bad-key-template.sh", []string{"no-key", "key_template", `"app:lock"`, "{key}"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := short(c.lock)
			if strings.Contains(c.name, "topology") {
				o.Topology = "redlock"
			}
			o.Duration, o.OutDir = 2*time.Second, t.TempDir()
			res, err := locktorture.Run(context.Background(), o)
			if err == nil {
				t.Fatalf("run passed with verdict %s, want an error", res.Verdict)
			}
			msg := err.Error()
			t.Log(msg)
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines: %q", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			noneLeft(t)
		})
	}
}

// TestHangIsUnknown: a program that never replies costs an unknown outcome,
// then it is killed and a fresh one takes its place, as after a crash.
func TestHangIsUnknown(t *testing.T) {
	clustertest.Need(t)
	o := short("exec:sh testdata/hang.sh")
	o.Clients, o.Wait, o.RedisTimeout, o.Duration, o.OutDir = 1, 50*time.Millisecond, 50*time.Millisecond, 3*time.Second, t.TempDir()
	res, err := locktorture.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// Each acquire ends unknown as its process is killed (the crash), and
	// counts among the unknown outcomes; with none granted the run tested
	// nothing.
	if res.Stats.Ops == 0 || res.Stats.Crashes < res.Stats.Ops || res.Stats.Acquired > 0 || res.Stats.Unknown != res.Stats.Ops {
		t.Errorf("want every acquire to end unknown in a crash of its silent program, got %+v", res.Stats)
	}
	if res.Verdict != checker.Untested {
		t.Errorf("verdict %s, want untested: no acquire succeeded", res.Verdict)
	}
	noneLeft(t)
}

// TestKilledHarness: the lock programs of a harness killed with SIGKILL die
// with it (the parent-death signal), and `torture clean` kills one marked by
// a dead harness that escaped.
func TestKilledHarness(t *testing.T) {
	clustertest.Need(t)
	if os.Getenv("LOCKTORTURE_TEST_HARNESS") != "" {
		o := short("exec-token")
		o.Duration, o.OutDir = time.Minute, t.TempDir()
		_, _ = locktorture.Run(context.Background(), o)
		return
	}
	h := exec.Command(os.Args[0], "-test.run=^TestKilledHarness$", "-test.count=1")
	h.Env = append(os.Environ(), "LOCKTORTURE_TEST_HARNESS=1")
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	pid := h.Process.Pid
	deadline := time.Now().Add(30 * time.Second)
	for len(programsOf(pid)) < 4 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(programsOf(pid)); n < 4 {
		_ = h.Process.Kill()
		_ = h.Wait()
		t.Fatalf("the harness started %d lock programs in 30s, want 4", n)
	}
	_ = h.Process.Kill()
	_ = h.Wait()
	deadline = time.Now().Add(5 * time.Second)
	for len(programsOf(pid)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := programsOf(pid); len(left) > 0 {
		t.Errorf("lock programs %v outlived their harness killed with SIGKILL", left)
	}
	// One that escaped: marked by a harness that is gone.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	orphan := exec.Command("sleep", "60")
	orphan.Env = append(os.Environ(), cluster.ProgramEnv+"="+strconv.Itoa(dead.Process.Pid))
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = orphan.Process.Kill(); _ = orphan.Wait() }()
	r, err := cluster.Clean(context.Background(), cluster.CleanOptions{})
	if err != nil {
		t.Log(err)
	}
	want := strconv.Itoa(orphan.Process.Pid)
	for _, p := range r.Processes {
		if p == want {
			return
		}
	}
	t.Errorf("clean removed processes %v, not the orphaned lock program %s", r.Processes, want)
}
