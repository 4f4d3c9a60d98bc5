package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/locktorture/locktorture/cluster"
)

// cmdClean removes what killed runs left: containers and networks labelled
// by a run whose harness is dead, the local backend's temp dirs of dead
// harnesses and any server still running from them, and lock programs
// whose harness died.
func cmdClean(args []string, stdout, stderr io.Writer) int {
	var opts cluster.CleanOptions
	fs := newFlags("clean", stderr)
	fs.BoolVar(&opts.All, "all", false, "also remove what runs still alive are using")
	fs.StringVar(&opts.DockerEndpoint, "docker-host", "", "Docker engine to clean (default: $DOCKER_HOST, else the local socket)")
	help, err := parse(fs, args, stdout)
	if code, stop := parseStop(help, err, "clean", stderr); stop {
		return code
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	r, err := cluster.Clean(ctx, opts)
	for _, n := range r.Notes {
		fmt.Fprintf(stdout, "skipped %s\n", n)
	}
	for _, group := range []struct {
		what  string
		names []string
	}{{"container", r.Containers}, {"network", r.Networks}, {"process", r.Processes}, {"temp dir", r.Dirs}} {
		for _, n := range group.names {
			fmt.Fprintf(stdout, "removed %s %s\n", group.what, n)
		}
	}
	fmt.Fprintf(stdout, "clean: removed %s\n", r)
	if err != nil {
		return fail(stderr, fmt.Errorf("clean: %v", err))
	}
	return exitValid
}
