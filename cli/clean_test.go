package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/internal/needdocker"
)

// buildTorture builds the CLI into a temp dir, to run it as a user would.
func buildTorture(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "torture")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/torture").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	return bin
}

// TestSignalsAndClean ends Docker runs of the CLI mid-fault, one with
// SIGINT and one with SIGKILL, and a local run with SIGKILL. The SIGINT
// run removes its containers and network itself; what the killed runs left
// (containers, a network, the local run's temp dir) `torture clean`
// removes, and after it `docker ps -a` and `docker network ls` show nothing
// of any of the runs.
func TestSignalsAndClean(t *testing.T) {
	needdocker.Need(t)
	clustertest.Need(t)
	bin := buildTorture(t)
	tmp := t.TempDir() // the runs' TMPDIR, where the local backend's dirs go
	interrupted, out := startPausing(t, bin, tmp, "docker")
	waitPaused(t, interrupted, out)
	if err := interrupted.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := interrupted.Wait()
	if code := procExit(err); code != exitUsage || !strings.Contains(out.String(), "interrupted") {
		t.Errorf("SIGINT: exit %d (%v), want %d and a note that the run was interrupted: %s", code, err, exitUsage, out)
	}
	if left, _ := needdocker.Left(t, interrupted.Process.Pid); len(left) > 0 {
		t.Errorf("the run ended by SIGINT left %v", left)
	}

	killed, out := startPausing(t, bin, tmp, "docker")
	waitPaused(t, killed, out)
	_ = killed.Process.Kill()
	_ = killed.Wait()
	if left, _ := needdocker.Left(t, killed.Process.Pid); len(left) == 0 {
		t.Fatal("the SIGKILLed run left nothing: the test shows nothing about clean")
	}

	local, out := startPausing(t, bin, tmp, "local")
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), "nemesis:") || len(harnessDirs(t, tmp)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the local run made no temp dir: %s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = local.Process.Kill()
	_ = local.Wait()

	clean := exec.Command(bin, "clean")
	clean.Env = append(os.Environ(), "TMPDIR="+tmp)
	cout, err := clean.CombinedOutput()
	if err != nil {
		t.Fatalf("torture clean: %v: %s", err, cout)
	}
	t.Logf("torture clean: %s", cout)
	for _, pid := range []int{interrupted.Process.Pid, killed.Process.Pid} {
		if left, _ := needdocker.Left(t, pid); len(left) > 0 {
			t.Errorf("after torture clean, run of pid %d still has %v", pid, left)
		}
	}
	if dirs := harnessDirs(t, tmp); len(dirs) > 0 {
		t.Errorf("after torture clean, the killed local run's temp dirs remain: %v", dirs)
	}
}

// startPausing starts a run of bin on backend, with TMPDIR tmp, that
// pauses a node at once and for long (pause-redis), so that a signal lands
// while a container is paused (or a process stopped); the run is killed at
// cleanup if it still runs.
func startPausing(t *testing.T, bin, tmp, backend string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--backend", backend, "--lock", "token", "--faults", "pause-redis",
		"--nemesis-interval", "100ms", "--nemesis-duration", "30s", "--duration", "60s", "--ttl", "300ms",
		"--quiet", "--out", t.TempDir())
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, out
}

// waitPaused waits (a minute at most) until a container of cmd's Docker
// run is paused.
func waitPaused(t *testing.T, cmd *exec.Cmd, out *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, paused := needdocker.Left(t, cmd.Process.Pid); paused > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no container of the run got paused within a minute: %s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// harnessDirs lists the local backend's temp dirs under tmp.
func harnessDirs(t *testing.T, tmp string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(tmp, cluster.TempDirPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func procExit(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -1
		}
		return ee.ExitCode()
	}
	return -1
}

// syncBuffer is the output of a command the test reads while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
