package program

import (
	"context"
	"os"
	"os/exec"
	"time"
)

// probeTimeout bounds one interpreter's trial run: an interpreter starting
// on a loaded machine takes a while, one that hangs must not stall a run.
const probeTimeout = 20 * time.Second

// firstWorking returns the first of candidates (empty ones skipped) whose
// trial command, built by trial, succeeds, and every candidate it tried.
// The in-tree programs find their interpreter this way: the one the user
// named first, then Debian's, then PATH's, since an interpreter earlier on
// PATH (pyenv's, NodeSource's) often cannot load Debian's Redis library.
func firstWorking(candidates []string, trial func(ctx context.Context, bin string) *exec.Cmd) (found string, tried []string) {
	for _, c := range candidates {
		if c == "" {
			continue
		}
		tried = append(tried, c)
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		err := trial(ctx, c).Run()
		cancel()
		if err == nil {
			return c, tried
		}
	}
	return "", tried
}

// withEnv is cmd with env added to the process's own environment.
func withEnv(cmd *exec.Cmd, env ...string) *exec.Cmd {
	cmd.Env = append(os.Environ(), env...)
	return cmd
}
