// Package needdocker gates tests on a Docker engine: they skip where none
// answers, except in CI (CI set), whose machine has one and where a skip
// would hide a broken backend.
package needdocker

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Need skips t when `docker info` fails and CI is not set, and fails it
// when `docker info` fails in CI.
func Need(t testing.TB) {
	t.Helper()
	out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput()
	if err == nil {
		return
	}
	msg := strings.TrimSpace(string(out))
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but docker info fails (%v: %s): the Docker backend tests must run here", err, msg)
	}
	t.Skipf("no Docker engine (docker info: %v: %s); these tests run in CI", err, msg)
}

// Left lists, as `docker ps -a` and `docker network ls` show them, the
// containers and networks of the harness process pid, and which of its
// containers are paused.
func Left(t testing.TB, pid int) (left []string, paused int) {
	t.Helper()
	filter := "label=" + LabelPid + "=" + strconv.Itoa(pid)
	for _, args := range [][]string{
		{"ps", "-a", "--format", "container {{.Names}} {{.Status}}", "--filter", filter},
		{"network", "ls", "--format", "network {{.Name}}", "--filter", filter},
	} {
		out, err := exec.Command("docker", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, out)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" {
				left = append(left, l)
				if strings.Contains(l, "(Paused)") {
					paused++
				}
			}
		}
	}
	return left, paused
}

// LabelPid is cluster.LabelPid, spelt out: the cluster package's own tests
// import this one.
const LabelPid = "locktorture.pid"
