package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	dc "github.com/ory/dockertest/v3/docker"

	"github.com/locktorture/locktorture/internal/procmark"
)

// Removed is what a clean-up removed.
type Removed struct {
	Containers, Networks, Processes, Dirs []string
	// Notes say what could not be looked at (no Docker engine here).
	Notes []string
}

// Any reports whether anything was removed.
func (r Removed) Any() bool {
	return len(r.Containers)+len(r.Networks)+len(r.Processes)+len(r.Dirs) > 0
}

func (r Removed) String() string {
	return fmt.Sprintf("%d containers, %d networks, %d processes, %d temp dirs",
		len(r.Containers), len(r.Networks), len(r.Processes), len(r.Dirs))
}

func (r *Removed) add(o Removed) {
	r.Containers = append(r.Containers, o.Containers...)
	r.Networks = append(r.Networks, o.Networks...)
	r.Processes = append(r.Processes, o.Processes...)
	r.Dirs = append(r.Dirs, o.Dirs...)
	r.Notes = append(r.Notes, o.Notes...)
}

// alive reports whether process pid exists on this machine.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// orphaned reports whether the run that labelled something is over: made
// on this host by a harness process that no longer exists. With all, every
// run counts, live ones included.
func orphaned(labels map[string]string, all bool) bool {
	if all {
		return true
	}
	host, _ := os.Hostname()
	if labels[LabelHost] != host {
		return false // another machine's run on a shared engine: not ours to judge
	}
	pid, err := strconv.Atoi(labels[LabelPid])
	return err != nil || !alive(pid)
}

// Reap removes the containers and networks of every run whose harness is
// dead (every run's, with all). A new run calls it before it starts.
func Reap(ctx context.Context, client *dc.Client, all bool) (Removed, error) {
	var out Removed
	cs, err := client.ListContainers(dc.ListContainersOptions{All: true, Context: ctx,
		Filters: map[string][]string{"label": {LabelRun}}})
	if err != nil {
		return out, fmt.Errorf("list containers: %w", err)
	}
	runs := map[string]bool{}
	for _, c := range cs {
		if orphaned(c.Labels, all) {
			runs[c.Labels[LabelRun]] = true
		}
	}
	nws, err := client.FilteredListNetworks(dc.NetworkFilterOpts{"label": {LabelRun: true}})
	if err != nil {
		return out, fmt.Errorf("list networks: %w", err)
	}
	for _, n := range nws {
		if orphaned(n.Labels, all) {
			runs[n.Labels[LabelRun]] = true
		}
	}
	var errs []error
	for run := range runs {
		r, err := removeRun(ctx, client, run)
		out.add(r)
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// removeRun removes every container, then the network, labelled with run.
func removeRun(ctx context.Context, client *dc.Client, run string) (Removed, error) {
	var out Removed
	filter := LabelRun + "=" + run
	cs, err := client.ListContainers(dc.ListContainersOptions{All: true, Context: ctx,
		Filters: map[string][]string{"label": {filter}}})
	if err != nil {
		return out, fmt.Errorf("list containers of run %s: %w", run, err)
	}
	var errs []error
	for _, c := range cs {
		err := client.RemoveContainer(dc.RemoveContainerOptions{ID: c.ID, Force: true, RemoveVolumes: true, Context: ctx})
		var gone *dc.NoSuchContainer
		if err != nil && !errors.As(err, &gone) {
			errs = append(errs, fmt.Errorf("remove container %s: %w", strings.Join(c.Names, ","), err))
			continue
		}
		out.Containers = append(out.Containers, strings.TrimPrefix(strings.Join(c.Names, ","), "/"))
	}
	nws, err := client.FilteredListNetworks(dc.NetworkFilterOpts{"label": {filter: true}})
	if err != nil {
		return out, errors.Join(append(errs, fmt.Errorf("list networks of run %s: %w", run, err))...)
	}
	for _, n := range nws {
		if err := client.RemoveNetwork(n.ID); err != nil {
			var gone *dc.NoSuchNetwork
			if !errors.As(err, &gone) {
				errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
				continue
			}
		}
		out.Networks = append(out.Networks, n.Name)
	}
	return out, errors.Join(errs...)
}

// CleanOptions say what Clean looks at.
type CleanOptions struct {
	// DockerEndpoint is the engine to clean; empty: $DOCKER_HOST, else
	// the local socket. An engine that does not answer is noted, not an
	// error: there is then nothing of ours on it to remove.
	DockerEndpoint string
	// All removes the leftovers of live runs too.
	All bool
	// TempDir is where the local backend's temp dirs are; default os.TempDir().
	TempDir string
}

// Clean removes what killed runs left: their containers and networks, and
// the local backend's temp dirs whose harness is dead together with any
// redis-server or Sentinel still running from one of them.
func Clean(ctx context.Context, opts CleanOptions) (Removed, error) {
	var out Removed
	var errs []error
	if client, _, err := dockerClient(ctx, opts.DockerEndpoint); err != nil {
		out.Notes = append(out.Notes, "docker: "+oneLine(err))
	} else {
		r, err := Reap(ctx, client, opts.All)
		out.add(r)
		errs = append(errs, err)
	}
	r, err := cleanDirs(opts.TempDir, opts.All)
	out.add(r)
	errs = append(errs, err)
	out.Processes = append(out.Processes, killPrograms(opts.All)...)
	return out, errors.Join(errs...)
}

// ProgramEnv marks every lock program a harness starts (locks/program):
// its value is the harness's pid (see internal/procmark).
const ProgramEnv = procmark.HarnessPID

// killPrograms kills, from /proc, every process marked with ProgramEnv by a
// harness that is dead (by any harness, with all) and returns their pids.
func killPrograms(all bool) []string {
	var out []string
	eachProc("environ", func(pid int, env []string) {
		for _, kv := range env {
			v, ok := strings.CutPrefix(kv, ProgramEnv+"=")
			if !ok {
				continue
			}
			h, err := strconv.Atoi(v)
			if (all || err != nil || !alive(h)) && h != os.Getpid() && syscall.Kill(pid, syscall.SIGKILL) == nil {
				out = append(out, strconv.Itoa(pid))
			}
			return
		}
	})
	return out
}

// cleanDirs removes the temp dirs of dead harnesses (see HarnessPidFile)
// and kills the servers still running from them. A dir with no pid file is
// not known to be ours and stays.
func cleanDirs(tmp string, all bool) (Removed, error) {
	var out Removed
	if tmp == "" {
		tmp = os.TempDir()
	}
	dirs, err := filepath.Glob(filepath.Join(tmp, TempDirPrefix+"*"))
	if err != nil {
		return out, err
	}
	var errs []error
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, HarnessPidFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && alive(pid) && !all {
			continue
		}
		for _, p := range serversUnder(d) {
			if err := syscall.Kill(p, syscall.SIGKILL); err == nil {
				out.Processes = append(out.Processes, strconv.Itoa(p))
			}
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", d, err))
			continue
		}
		out.Dirs = append(out.Dirs, d)
	}
	return out, errors.Join(errs...)
}

// serversUnder lists the processes whose command line names a path under
// dir (a redis-server's --dir, a Sentinel's config file), from /proc; none
// where there is no /proc.
func serversUnder(dir string) []int {
	var out []int
	eachProc("cmdline", func(pid int, args []string) {
		for _, arg := range args {
			if arg == dir || strings.HasPrefix(arg, dir+string(filepath.Separator)) {
				out = append(out, pid)
				return
			}
		}
	})
	return out
}

// eachProc calls f with the pid and the NUL-separated fields of
// /proc/<pid>/<file> (environ, cmdline) of every process but this one whose
// file can be read; it calls f for none where there is no /proc.
func eachProc(file string, f func(pid int, fields []string)) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), file))
		if err != nil {
			continue
		}
		f(pid, strings.Split(string(b), "\x00"))
	}
}
