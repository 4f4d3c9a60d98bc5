package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dc "github.com/ory/dockertest/v3/docker"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/docker"
	"github.com/locktorture/locktorture/internal/needdocker"
)

// inImage is what the test runs in one container of the harness's image,
// as a pod of docs/matrix-k8s.yaml would: runs of the reference lock and of
// both in-tree lock programs (their interpreters and Redis libraries must
// be in the image), then the smoke matrix in two shards, merged as CI does
// (.ci/run). Each step ends with a line "== exit CODE".
const inImage = `
for lock in token redis-py node-redis; do
  echo "== run $lock"
  torture run --lock $lock --duration 2s --seed 1 --quiet --out /tmp/runs; echo "== exit $?"
done
for k in 1 2; do
  echo "== shard $k"
  torture matrix /spec/smoke.yaml --shard $k/2 --out /tmp/shard-$k --quiet; echo "== exit $?"
done
echo "== merge"
torture matrix merge --out /tmp/merged /tmp/shard-*; echo "== exit $?"
`

// TestTortureImage builds the harness's image with `torture image` from
// this checkout, checks that --print names the same tag, and runs inImage
// in a container of it: every step must pass (a shard may exit 1, a cell
// not as expected, which the merge then reports). The container is removed
// even when the test fails, and labelled as a run's, so that `torture
// clean` removes it if the test is killed; the image stays, as the Redis
// image does.
func TestTortureImage(t *testing.T) {
	needdocker.Need(t)
	clustertest.Need(t, "redis-server", "python3", "node", "dpkg-query", "go", "git")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "torture")
	// Built as `torture image` builds the image's binary, so that its
	// build finds every package compiled already.
	build := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", bin, "./cmd/torture")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	torture := func(args ...string) string {
		t.Helper()
		start := time.Now()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("torture %s: %v: %s", strings.Join(args, " "), err, out)
		}
		t.Logf("torture %s (%v): %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out)
		return string(out)
	}
	tag := strings.TrimSpace(torture("image", "--print"))
	if !strings.HasPrefix(tag, docker.TortureRepository+":") {
		t.Fatalf("torture image --print = %q, want %s:REVISION", tag, docker.TortureRepository)
	}
	if out := torture("image"); !strings.Contains(out, " "+tag+" (") {
		t.Fatalf("torture image did not build %s: %s", tag, out)
	}
	spec, err := os.ReadFile(filepath.Join(root, "matrix", "smoke.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	logs := runInImage(ctx, t, tag, spec)
	t.Logf("in the image (%v):\n%s", time.Since(start).Round(time.Millisecond), logs)
	checkSteps(t, logs)
}

// runInImage runs inImage with /bin/sh in a container of image tag, with
// spec at /spec/smoke.yaml, and returns its output; the container is gone
// when it returns.
func runInImage(ctx context.Context, t *testing.T, tag string, spec []byte) string {
	t.Helper()
	client, _, err := docker.Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	host, _ := os.Hostname()
	name := "locktorture-image-test-" + hex.EncodeToString(suffix)
	c, err := client.CreateContainer(dc.CreateContainerOptions{Name: name, Context: ctx,
		Config: &dc.Config{Image: tag, Entrypoint: []string{"/bin/sh", "-c"}, Cmd: []string{inImage},
			Labels: map[string]string{cluster.LabelRun: name, cluster.LabelPid: strconv.Itoa(os.Getpid()),
				cluster.LabelHost: host, cluster.LabelStarted: strconv.FormatInt(time.Now().Unix(), 10)}}})
	if err != nil {
		t.Fatalf("create a container of %s: %v", tag, err)
	}
	t.Cleanup(func() {
		err := client.RemoveContainer(dc.RemoveContainerOptions{ID: c.ID, Force: true, RemoveVolumes: true})
		if err != nil {
			t.Errorf("remove container %s: %v", name, err)
		}
	})
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	_ = tw.WriteHeader(&tar.Header{Name: "spec/", Mode: 0o755, Typeflag: tar.TypeDir})
	_ = tw.WriteHeader(&tar.Header{Name: "spec/smoke.yaml", Mode: 0o644, Size: int64(len(spec)), Typeflag: tar.TypeReg})
	_, _ = tw.Write(spec)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := client.UploadToContainer(c.ID, dc.UploadToContainerOptions{InputStream: &tarball, Path: "/", Context: ctx}); err != nil {
		t.Fatalf("copy the spec into %s: %v", name, err)
	}
	if err := client.StartContainerWithContext(c.ID, nil, ctx); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	code, err := client.WaitContainerWithContext(c.ID, ctx)
	var out bytes.Buffer
	lerr := client.Logs(dc.LogsOptions{Context: context.WithoutCancel(ctx), Container: c.ID,
		OutputStream: &out, ErrorStream: &out, Stdout: true, Stderr: true})
	if err != nil || lerr != nil || code != 0 {
		t.Fatalf("container %s: exit %d, %v, logs: %v:\n%s", name, code, err, lerr, out.String())
	}
	return out.String()
}

// checkSteps checks the exit code of each step of inImage in its output,
// and that each run's verdict is VALID.
func checkSteps(t *testing.T, logs string) {
	t.Helper()
	steps := map[string]string{}
	var step string
	var body strings.Builder
	for _, line := range strings.Split(logs, "\n") {
		switch {
		case strings.HasPrefix(line, "== exit "):
			code := strings.TrimPrefix(line, "== exit ")
			steps[step] = code
			ok := code == "0" || strings.HasPrefix(step, "shard") && code == "1"
			if !ok {
				t.Errorf("%s: exit %s:\n%s", step, code, body.String())
			}
			if strings.HasPrefix(step, "run ") && !strings.Contains(body.String(), "verdict: VALID") {
				t.Errorf("%s: no VALID verdict:\n%s", step, body.String())
			}
		case strings.HasPrefix(line, "== "):
			step = strings.TrimPrefix(line, "== ")
			body.Reset()
		default:
			body.WriteString(line + "\n")
		}
	}
	for _, want := range []string{"run token", "run redis-py", "run node-redis", "shard 1", "shard 2", "merge"} {
		if _, ok := steps[want]; !ok {
			t.Errorf("step %q did not finish", want)
		}
	}
}
