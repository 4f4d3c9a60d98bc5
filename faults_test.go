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
	"github.com/locktorture/locktorture/history"
)

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
	t.Run("every fault", testEveryFaultLeavesNothing)
	t.Run("SIGINT mid-fault", testSIGINTMidFault)
}

// testEveryFaultLeavesNothing runs every single-node fault and checks that
// the run healed them all and left no server, proxy or listener behind.
func testEveryFaultLeavesNothing(t *testing.T) {
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
}

// testSIGINTMidFault interrupts a torture process while a pause-redis is
// in force and checks that it exits 2, kills its servers, heals the fault
// and writes a summary that says it was interrupted.
func testSIGINTMidFault(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "torture")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/torture").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out := t.TempDir()
	cmd := exec.Command(bin, "run", "--lock", "token", "--ttl", "300ms", "--duration", "60s", "--seed", "5",
		"--faults", "pause-redis", "--nemesis-interval", "400ms", "--nemesis-duration", "2s",
		"--out", out, "--run-id", "sigint", "--quiet")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	servers := serversMidFault(t, cmd.Process.Pid, filepath.Join(out, "sigint", "history.jsonl"))
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
}

// serversMidFault waits (20 s at most) until the history hist shows a
// fault started and not healed, and returns the redis-server children of
// the torture process pid at that moment.
func serversMidFault(t *testing.T, pid int, hist string) []int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var servers []int
	for {
		if time.Now().After(deadline) {
			t.Fatal("no fault started within 20s")
		}
		time.Sleep(50 * time.Millisecond)
		b, _ := os.ReadFile(hist)
		if strings.Count(string(b), `"fault-start"`) > strings.Count(string(b), `"fault-heal"`) {
			servers = children(t, pid)
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
	return servers
}
