package docker

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Checkout is a git checkout of the module that a torture binary's main
// package belongs to. `torture image` run inside one builds the binary from
// it, so that the image's tag, git's revision of the tree, names what the
// image holds: a binary built earlier may come from another commit, and go
// stamps no commit into a build from a git worktree or with -buildvcs=false.
type Checkout struct {
	Dir     string // the module's root
	Package string // the main package's import path
}

// FindCheckout returns the checkout around dir of the module whose main
// package binary self is, or nil when dir is in none or git or go is not
// there to build from it.
func FindCheckout(ctx context.Context, self, dir string) *Checkout {
	info, err := buildinfo.ReadFile(self)
	if err != nil || info.Main.Path == "" || info.Path == "" {
		return nil
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil
	}
	cmd := exec.CommandContext(ctx, "go", "env", "GOMOD")
	cmd.Dir = dir
	out, err := cmd.Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return nil
	}
	// The main package's module is the one around dir, or one of its
	// workspace's (the torture command is a module of its own beside the
	// core, in the checkout's go.work).
	cmd = exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", info.Main.Path)
	cmd.Dir = dir
	out, err = cmd.Output()
	modDir := strings.TrimSpace(string(out))
	if err != nil || modDir == "" {
		return nil
	}
	c := &Checkout{Dir: modDir, Package: info.Path}
	if _, err := c.git(ctx, "rev-parse", "HEAD"); err != nil {
		return nil
	}
	return c
}

func (c *Checkout) git(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = c.Dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s in %s: %w", strings.Join(args, " "), c.Dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Revision is the checkout's HEAD, 12 hex digits as Revision gives a
// stamped binary's, and "-dirty" when the tree has changes not committed
// (untracked files included: they build too).
func (c *Checkout) Revision(ctx context.Context) (string, error) {
	rev, err := c.git(ctx, "rev-parse", "--short=12", "HEAD")
	if err != nil {
		return "", err
	}
	status, err := c.git(ctx, "status", "--porcelain")
	if err != nil {
		return "", err
	}
	if status != "" {
		rev += "-dirty"
	}
	return rev, nil
}

// Build builds the main package from the checkout into out with CGO off,
// since a static binary needs no C library of the build machine's in the
// image, and without the symbol table and DWARF, a third of its size (panics
// still print their stacks).
func (c *Checkout) Build(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", out, c.Package)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s in %s: %w: %s", c.Package, c.Dir, err, strings.Join(strings.Fields(string(msg)), " "))
	}
	return nil
}

// Harness is the torture binary an image is to hold, and its revision.
type Harness struct {
	Binary   string
	Revision string
	// From, when set, is the checkout Binary is still to be built from
	// (Prepare).
	From *Checkout
}

// FindHarness picks the binary for the image of the running binary self,
// run in dir, and names its revision, building nothing yet: inside a
// checkout of self's module, the binary built from the checkout, at git's
// revision; elsewhere self, at its own (see Revision).
func FindHarness(ctx context.Context, self, dir string) (Harness, error) {
	if c := FindCheckout(ctx, self, dir); c != nil {
		rev, err := c.Revision(ctx)
		if err != nil {
			return Harness{}, err
		}
		return Harness{Revision: rev, From: c}, nil
	}
	rev, err := Revision(self)
	if err != nil {
		return Harness{}, err
	}
	return Harness{Binary: self, Revision: rev}, nil
}

// Prepare builds the binary from the checkout, into folder tmp, if it is
// to be built.
func (h *Harness) Prepare(ctx context.Context, tmp string) error {
	if h.From == nil {
		return nil
	}
	h.Binary = filepath.Join(tmp, "torture")
	return h.From.Build(ctx, h.Binary)
}
