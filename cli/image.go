package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/docker"
)

// cmdImage builds the image a cluster runs the harness in
// (docs/matrix-k8s.yaml) with the local Docker engine, pulling nothing. Run
// in a checkout of this binary's module, it builds the binary from the
// tree, so that the tag, git's revision, names what the image holds;
// elsewhere it puts in this binary, so that a team's own main goes in with
// its registrations (see docker.FindHarness).
func cmdImage(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("image", stderr)
	tag := fs.String("tag", "", "the image's name (default: locktorture:REVISION, the checkout's commit, else this binary's)")
	printOnly := fs.Bool("print", false, "print the image's name and build nothing")
	endpoint := fs.String("docker-host", "", "Docker engine to build with (default: $DOCKER_HOST, else the local socket)")
	help, err := parse(fs, args, stdout)
	if code, stop := parseStop(help, err, "image", stderr); stop {
		return code
	}
	if runtime.GOOS != "linux" {
		return fail(stderr, fmt.Errorf("image: the image holds this binary and this machine's redis-server and interpreters: build it on Linux, not %s", runtime.GOOS))
	}
	self, err := os.Executable()
	if err != nil {
		return fail(stderr, fmt.Errorf("image: find this binary: %v", err))
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fail(stderr, fmt.Errorf("image: %v", err))
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	h, err := docker.FindHarness(ctx, self, cwd)
	if err == nil && *tag == "" {
		*tag = docker.TortureRepository + ":" + h.Revision
	} else if err == nil {
		err = docker.CheckTag(*tag)
	}
	if err != nil {
		return fail(stderr, fmt.Errorf("image: %v", err))
	}
	if *printOnly {
		fmt.Fprintln(stdout, *tag)
		return exitValid
	}
	return buildImage(ctx, h, *tag, *endpoint, stdout, stderr)
}

// buildImage builds the harness (from its checkout, if it has one) and the
// image, and says how to push it.
func buildImage(ctx context.Context, h docker.Harness, tag, endpoint string, stdout, stderr io.Writer) int {
	redis, err := cluster.FindRedisServer("")
	if err != nil {
		return fail(stderr, fmt.Errorf("image: %v", err))
	}
	client, _, err := docker.Connect(ctx, endpoint)
	if err != nil {
		return fail(stderr, fmt.Errorf("image: %v", err))
	}
	tmp, err := os.MkdirTemp("", "locktorture-image-")
	if err != nil {
		return fail(stderr, fmt.Errorf("image: %v", err))
	}
	defer os.RemoveAll(tmp)
	if h.From != nil {
		fmt.Fprintf(stdout, "building %s from %s at %s (CGO off)\n", h.From.Package, h.From.Dir, h.Revision)
	}
	if err := h.Prepare(ctx, tmp); err != nil {
		return fail(stderr, fmt.Errorf("image: %v", err))
	}
	if strings.HasPrefix(h.Revision, "content-") {
		fmt.Fprintln(stdout, "this binary carries no commit (go run, -buildvcs=false, no checkout): it is named by its content's hash")
	}
	b, err := docker.BuildTorture(ctx, client, docker.TortureOptions{Binary: h.Binary, RedisServer: redis, Tag: tag})
	if errors.Is(err, context.Canceled) {
		return fail(stderr, errors.New("image: interrupted"))
	}
	if err != nil {
		return fail(stderr, fmt.Errorf("image: %v", err))
	}
	what := "built"
	if b.Reused {
		what = "already built:"
	}
	fmt.Fprintf(stdout, "%s %s (%d files, %.0f MB)\n", what, b.Tag, b.Files, float64(b.Bytes)/1e6)
	if strings.Contains(b.Tag, "/") {
		fmt.Fprintf(stdout, "push it to your registry:\n  docker push %s\n", b.Tag)
	} else {
		fmt.Fprintf(stdout, "push it to your registry:\n  docker tag %s REGISTRY/%s\n  docker push REGISTRY/%s\n", b.Tag, b.Tag, b.Tag)
	}
	return exitValid
}
