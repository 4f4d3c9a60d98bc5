package locktorture_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
)

// faulty returns options for a short run under one fault.
func faulty(lock, fault string, seed int64) locktorture.Options {
	o := short(lock, seed)
	o.Faults, o.NemesisInterval, o.Duration = locktorture.ParseList(fault), time.Second, 6*time.Second
	return o
}

// TestFaults shows, for each fault of the README's fault table, the lock it breaks
// and the lock that survives it, with the anomaly kind asserted.
func TestFaults(t *testing.T) {
	needRedis(t)
	cases := []struct {
		name string
		opts func() locktorture.Options
		expect
	}{
		{
			name: "token, client paused past its TTL",
			opts: func() locktorture.Options {
				o := faulty("token", "pause-client", 1)
				// Two clients taking turns (think time), so a pause often
				// catches the holder in its hold.
				o.Clients, o.HoldMin, o.HoldMax, o.Think = 2, 50*time.Millisecond, 150*time.Millisecond, 30*time.Millisecond
				o.Duration = 10 * time.Second
				return o
			},
			expect: expect{verdict: checker.Invalid, want: []checker.Kind{checker.KindDoubleHolder}, class: checker.ClassLeaseOutlived},
		},
		{
			name: "watchdog, client paused: its watchdog stops with it",
			opts: func() locktorture.Options {
				o := faulty("watchdog", "pause-client", 1)
				// Two clients taking turns (think time), so a pause often
				// catches the holder in its hold.
				o.Clients, o.HoldMin, o.HoldMax, o.Think = 2, 50*time.Millisecond, 150*time.Millisecond, 30*time.Millisecond
				o.Duration = 10 * time.Second
				return o
			},
			expect: expect{verdict: checker.Invalid, want: []checker.Kind{checker.KindDoubleHolder}},
		},
		{
			name: "watchdog, holder partitioned while its work goes on",
			opts: func() locktorture.Options {
				o := faulty("watchdog", "partition", 3)
				// Work well past the TTL, so a partition that catches the holder
				// catches it with work left while its key expires.
				o.Clients, o.HoldMin, o.HoldMax, o.Think, o.Duration = 2, time.Second, 2*time.Second, 100*time.Millisecond, 8*time.Second
				o.RedisTimeout = 500 * time.Millisecond
				return o
			},
			expect: expect{verdict: checker.Invalid, want: []checker.Kind{checker.KindDoubleHolder}},
		},
		{
			name: "setnx-expire, client crashes between SETNX and PEXPIRE",
			opts: func() locktorture.Options {
				o := faulty("setnx-expire", "crash-client", 2)
				o.Clients, o.NemesisInterval = 3, 500*time.Millisecond
				return o
			},
			expect: expect{verdict: checker.Invalid, want: []checker.Kind{checker.KindStuckLock}},
		},
		{
			name: "token, client crashes: the TTL frees its lock",
			opts: func() locktorture.Options {
				o := faulty("token", "crash-client", 3)
				o.Clients, o.NemesisInterval = 3, 500*time.Millisecond
				return o
			},
			expect: expect{verdict: checker.Valid},
		},
		{
			name: "token, acquire reply later than the TTL",
			opts: func() locktorture.Options {
				o := faulty("token", "latency", 4)
				o.Clients, o.HoldMin, o.HoldMax, o.Think = 2, 50*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond
				return o
			},
			expect: expect{verdict: checker.Invalid, want: []checker.Kind{checker.KindDoubleHolder}},
		},
		{
			name: "token-validity refuses the late lease",
			opts: func() locktorture.Options {
				o := faulty("token-validity", "latency", 4)
				o.Clients, o.HoldMin, o.HoldMax, o.Think = 2, 50*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond
				return o
			},
			expect: expect{absent: []checker.Kind{checker.KindDoubleHolder}},
		},
		{
			name: "set-px, a replayed DEL deletes the next holder's lock",
			opts: func() locktorture.Options {
				o := faulty("set-px", "lost-reply", 1)
				o.Clients, o.RedisTimeout = 3, 100*time.Millisecond
				return o
			},
			expect: expect{verdict: checker.Invalid, anyOf: []checker.Kind{checker.KindForeignRelease, checker.KindDoubleHolder}},
		},
		{
			name: "set-px, a replayed SET NX orphans the lock",
			opts: func() locktorture.Options {
				o := faulty("set-px", "lost-reply", 1)
				// Short waits and some think time leave the lock free often,
				// so a replayed SET NX orphans a free lock and others fail.
				o.Clients, o.RedisTimeout, o.Wait, o.Think = 3, 100*time.Millisecond, 150*time.Millisecond, 50*time.Millisecond
				return o
			},
			expect: expect{verdict: checker.Invalid, want: []checker.Kind{checker.KindSpuriousFailure}},
		},
		{
			name: "token, redis restarts without persistence",
			opts: func() locktorture.Options {
				o := faulty("token", "crash-redis", 3)
				o.Clients, o.TTL, o.HoldMin, o.HoldMax = 3, time.Second, 50*time.Millisecond, 200*time.Millisecond
				o.Persistence, o.RedisTimeout = cluster.PersistNone, 200*time.Millisecond
				return o
			},
			expect: expect{verdict: checker.Invalid, want: []checker.Kind{checker.KindDoubleHolder}, class: checker.ClassWithinLease},
		},
		{
			name: "token, redis restarts with AOF fsync always",
			opts: func() locktorture.Options {
				o := faulty("token", "crash-redis", 3)
				o.Clients, o.TTL, o.HoldMin, o.HoldMax = 3, time.Second, 50*time.Millisecond, 200*time.Millisecond
				o.Persistence, o.RedisTimeout = cluster.PersistAlways, 200*time.Millisecond
				// Safety holds; a SET that ran as the server died, its
				// reply lost, may keep its client's own key for a TTL (a
				// spurious failure, liveness), as after any crash.
				o.FailOn = checker.FailOnSafety
				return o
			},
			expect: expect{verdict: checker.Valid},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, tc.opts())
			tc.check(t, res)
			assertHealed(t, res.Dir)
		})
	}
}

// assertHealed checks that every fault the history started was healed.
func assertHealed(t *testing.T, dir string) {
	t.Helper()
	open := 0
	for _, e := range loadHistory(t, dir).Infos() {
		switch e.Op {
		case history.FaultStart:
			open++
		case history.FaultHeal:
			open--
		}
	}
	if open != 0 {
		t.Errorf("%d faults started and never healed", open)
	}
}

// children lists the pids of this process's redis-server children.
func children(t *testing.T, parent int) []int {
	t.Helper()
	out, _ := exec.Command("pgrep", "-P", strconv.Itoa(parent), "redis-server").Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// listeners returns the TCP ports this process listens on.
func listeners(t *testing.T) map[string]bool {
	t.Helper()
	inodes := map[string]bool{}
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		l, err := os.Readlink("/proc/self/fd/" + fd.Name())
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	ports := map[string]bool{}
	for _, file := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 9 && f[3] == "0A" && inodes[f[9]] {
				ports[f[1]] = true
			}
		}
	}
	return ports
}

// TestNothingLeftBehind: a run with every fault stops every redis-server
// and proxy it started, and so does a torture process interrupted by SIGINT
// in the middle of a fault, leaving no paused server behind either.
func TestNothingLeftBehind(t *testing.T) {
	needRedis(t)
	t.Run("every fault", func(t *testing.T) {
		before := listeners(t)
		o := short("watchdog", 9)
		o.Faults = locktorture.ParseList("latency,partition,lost-reply,pause-redis,crash-redis,pause-client,crash-client")
		o.NemesisInterval, o.Duration, o.RedisTimeout = 300*time.Millisecond, 5*time.Second, 200*time.Millisecond
		res := run(t, o)
		assertHealed(t, res.Dir)
		if pids := children(t, os.Getpid()); len(pids) > 0 {
			t.Errorf("redis-server children still running: %v", pids)
		}
		for p := range listeners(t) {
			if !before[p] {
				t.Errorf("listener %s (a proxy or the toxiproxy API) still open", p)
			}
		}
	})
	t.Run("SIGINT mid-fault", func(t *testing.T) {
		bin := filepath.Join(t.TempDir(), "torture")
		if out, err := exec.Command("go", "build", "-o", bin, "./cmd/torture").CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
		out := t.TempDir()
		cmd := exec.Command(bin, "run", "--lock", "token", "--ttl", "300ms", "--duration", "60s", "--seed", "5",
			"--nemesis", "pause-redis", "--nemesis-interval", "400ms", "--nemesis-duration", "2s",
			"--out", out, "--run-id", "sigint", "--quiet")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		hist := filepath.Join(out, "sigint", "history.jsonl")
		deadline := time.Now().Add(20 * time.Second)
		var servers []int
		for {
			if time.Now().After(deadline) {
				t.Fatal("no fault started within 20s")
			}
			time.Sleep(50 * time.Millisecond)
			b, _ := os.ReadFile(hist)
			if strings.Count(string(b), `"fault-start"`) > strings.Count(string(b), `"fault-heal"`) {
				servers = children(t, cmd.Process.Pid)
				break
			}
		}
		if len(servers) == 0 {
			t.Fatal("torture has no redis-server child mid-run")
		}
		paused := false
		for _, pid := range servers {
			if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); strings.Contains(string(st), ") T ") {
				paused = true
			}
		}
		if !paused {
			t.Log("the fault-start was flushed before the server showed as stopped; going on")
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if code := cmd.ProcessState.ExitCode(); code != 2 {
				t.Errorf("interrupted run: exit %d (%v), want 2", code, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("torture did not stop within 30s of SIGINT")
		}
		for _, pid := range servers {
			if err := syscall.Kill(pid, 0); err == nil {
				t.Errorf("redis-server %d survived the interrupted run", pid)
			}
		}
		assertHealed(t, filepath.Join(out, "sigint"))
		var sum struct {
			Interrupted bool `json:"interrupted"`
		}
		b, err := os.ReadFile(filepath.Join(out, "sigint", "summary.json"))
		if err != nil || json.Unmarshal(b, &sum) != nil || !sum.Interrupted {
			t.Errorf("summary.json of the interrupted run: %v %s", err, b)
		}
	})
}
