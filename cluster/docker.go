package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	dc "github.com/ory/dockertest/v3/docker"

	"github.com/locktorture/locktorture/docker"
)

// The labels every container and network of the Docker backend carries:
// which run made it, when, and the harness process (and host) that runs it,
// so that a later run or `torture clean` can remove what a killed run left.
const (
	LabelRun     = "locktorture.run"
	LabelStarted = "locktorture.started"
	LabelPid     = "locktorture.pid"
	LabelHost    = "locktorture.host"
	LabelNode    = "locktorture.node"
)

// Ports the servers listen on inside their containers.
const (
	containerRedisPort    = "6379/tcp"
	containerSentinelPort = "26379/tcp"
)

// DockerOptions configure the Docker backend.
type DockerOptions struct {
	// Endpoint of the Docker engine; empty: $DOCKER_HOST, else the local socket.
	Endpoint string
	// RunID names the run in the containers' and network's names and labels.
	RunID string
	// RedisServer is the binary the image is built from (see FindRedisServer).
	RedisServer string
	// Logf receives what the backend reaps from earlier runs.
	Logf func(format string, args ...any)
}

// Docker is the Docker backend: every server a container of the run's own
// image (built locally from the installed redis-server, see package docker)
// on a bridge network of the run's own, its port published on 127.0.0.1.
// Process faults act on the containers: pause and unpause (the cgroup
// freezer, like SIGSTOP), kill (SIGKILL), and restart: the same container
// when it keeps its data (AOF), a fresh one without persistence.
type Docker struct {
	client   *dc.Client
	image    string
	run      string
	labels   map[string]string
	network  *dc.Network
	gateway  string
	endpoint string

	owners  owners // container IP -> node name
	mu      sync.Mutex
	servers []*container
	closed  bool
}

// ErrDocker marks a Docker engine that is missing or unreachable.
var ErrDocker = errors.New("docker")

// NewDocker reaches the Docker engine, removes what runs of dead harnesses
// left on it, makes sure the Redis image exists and creates the run's
// network. Docker missing or unreachable is an error wrapping ErrDocker.
func NewDocker(ctx context.Context, opts DockerOptions) (*Docker, error) {
	bin, err := FindRedisServer(opts.RedisServer)
	if err != nil {
		return nil, err
	}
	client, endpoint, err := dockerClient(ctx, opts.Endpoint)
	if err != nil {
		return nil, err
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if removed, err := Reap(ctx, client, false); err != nil {
		opts.Logf("reap leftovers of earlier runs: %v", err)
	} else if removed.Any() {
		opts.Logf("removed leftovers of dead runs: %s", removed)
	}
	// libfaketime goes into the image when this machine has it: the clock
	// faults preload it into the servers.
	var extra []string
	if lib, err := FindLibfaketime(); err == nil {
		extra = append(extra, lib)
	}
	image, err := docker.Ensure(ctx, client, bin, extra...)
	if err != nil {
		return nil, fmt.Errorf("docker backend: %w", err)
	}
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	run := opts.RunID
	if run == "" {
		run = "run"
	}
	run += "-" + hex.EncodeToString(suffix)
	host, _ := os.Hostname()
	d := &Docker{client: client, image: image, run: run, endpoint: endpoint,
		labels: map[string]string{LabelRun: run, LabelStarted: strconv.FormatInt(time.Now().Unix(), 10),
			LabelPid: strconv.Itoa(os.Getpid()), LabelHost: host}}
	nw, err := client.CreateNetwork(dc.CreateNetworkOptions{Name: "locktorture-" + run, Driver: "bridge",
		Labels: d.labels, CheckDuplicate: true, Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("docker backend: create network: %w", err)
	}
	d.network = nw
	info, err := client.NetworkInfo(nw.ID)
	if err == nil && len(info.IPAM.Config) > 0 {
		d.gateway = info.IPAM.Config[0].Gateway
	}
	if d.gateway == "" {
		d.Close()
		return nil, fmt.Errorf("docker backend: network %s has no gateway address (%v)", nw.Name, err)
	}
	return d, nil
}

// dockerClient connects to the engine and checks that it answers.
func dockerClient(ctx context.Context, endpoint string) (*dc.Client, string, error) {
	client, ep, err := docker.Connect(ctx, endpoint)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrDocker, err)
	}
	return client, ep, nil
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// Name implements Backend.
func (d *Docker) Name() string { return "docker" }

// HarnessIP implements Backend: the gateway of the run's network, the
// host's address on it, which the containers reach.
func (d *Docker) HarnessIP() string { return d.gateway }

// Image is the tag of the Redis image the run uses.
func (d *Docker) Image() string { return d.image }

// Run is the value of the run's LabelRun.
func (d *Docker) Run() string { return d.run }

// Owner implements Backend: by the container's address on the network.
func (d *Docker) Owner(ip net.IP) (string, bool) { return d.owners.lookup(ip) }

// Start implements Backend.
func (d *Docker) Start(ctx context.Context, spec NodeSpec) (Server, error) {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, errors.New("docker backend is closed")
	}
	c := &container{d: d, name: spec.Name}
	err := onFreePort(func(port int) error {
		c.port = port
		return c.create(ctx, spec)
	}, isPortTaken)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.servers = append(d.servers, c)
	d.mu.Unlock()
	return c, nil
}

// isPortTaken: the port, or the cluster bus port beside it (port+10000,
// which redis-server binds as well), was taken meanwhile.
func isPortTaken(err error) bool {
	s := err.Error()
	return strings.Contains(s, "port is already allocated") || strings.Contains(s, "address already in use") ||
		strings.Contains(s, "Failed listening on port")
}

// Close removes every container and the network of the run.
func (d *Docker) Close() error {
	if !markClosed(&d.mu, &d.closed) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*opTimeout)
	defer cancel()
	removed, err := removeRun(ctx, d.client, d.run)
	_ = removed
	if err != nil {
		return fmt.Errorf("docker backend: remove run %s: %w", d.run, err)
	}
	return nil
}

// container is one server of the Docker backend.
type container struct {
	d    *Docker
	name string
	port int

	mu      sync.Mutex
	id      string
	ip      string
	pid     int
	paused  bool
	created NodeSpec // the spec the container was created from
}

func (c *container) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)) }
func (c *container) Dir() string  { return "" }

func (c *container) Pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pid
}

func (c *container) cmd(spec NodeSpec) ([]string, string) {
	if spec.Sentinel != "" {
		return []string{"/data/sentinel.conf", "--sentinel"}, containerSentinelPort
	}
	a := []string{"--port", "6379", "--protected-mode", "no", "--daemonize", "no", "--save", "",
		"--dir", "/data", "--dbfilename", "dump.rdb"}
	switch spec.Persistence {
	case PersistEverysec, PersistAlways:
		a = append(a, "--appendonly", "yes", "--appendfsync", string(spec.Persistence))
	default:
		a = append(a, "--appendonly", "no")
	}
	return append(a, spec.Args...), containerRedisPort
}

// create makes a fresh container on c.port, starts it and waits for PING.
func (c *container) create(ctx context.Context, spec NodeSpec) error {
	cmd, port := c.cmd(spec)
	labels := map[string]string{LabelNode: spec.Name}
	for k, v := range c.d.labels {
		labels[k] = v
	}
	exposed := map[dc.Port]struct{}{dc.Port(port): {}}
	bindings := map[dc.Port][]dc.PortBinding{dc.Port(port): {{HostIP: "127.0.0.1", HostPort: strconv.Itoa(c.port)}}}
	for _, p := range spec.Peer {
		// Other servers reach it at the gateway, as they reach the
		// harness's listeners: the address a topology announces.
		cp := dc.Port(strconv.Itoa(p) + "/tcp")
		exposed[cp] = struct{}{}
		bindings[cp] = []dc.PortBinding{{HostIP: c.d.gateway, HostPort: strconv.Itoa(p)}}
	}
	cont, err := c.d.client.CreateContainer(dc.CreateContainerOptions{
		Name:       "locktorture-" + c.d.run + "-" + spec.Name,
		Config:     &dc.Config{Image: c.d.image, Cmd: cmd, Labels: labels, ExposedPorts: exposed, Env: spec.Env},
		HostConfig: &dc.HostConfig{NetworkMode: c.d.network.Name, PortBindings: bindings},
		Context:    ctx,
	})
	if err != nil {
		return fmt.Errorf("create container for %s: %w", spec.Name, err)
	}
	c.mu.Lock()
	c.id, c.created = cont.ID, spec
	c.mu.Unlock()
	if spec.Sentinel != "" {
		conf := "port 26379\nprotected-mode no\ndaemonize no\ndir /data\n" + spec.Sentinel
		if err := c.upload(ctx, "sentinel.conf", conf); err != nil {
			c.drop(ctx)
			return err
		}
	}
	if err := c.start(ctx); err != nil {
		c.drop(ctx)
		return err
	}
	return nil
}

func (c *container) upload(ctx context.Context, name, text string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(text))}); err != nil {
		return err
	}
	_, _ = tw.Write([]byte(text))
	if err := tw.Close(); err != nil {
		return err
	}
	if err := c.d.client.UploadToContainer(c.id, dc.UploadToContainerOptions{InputStream: &buf, Path: "/data", Context: ctx}); err != nil {
		return fmt.Errorf("copy %s into the container of %s: %w", name, c.name, err)
	}
	return nil
}

// start starts the existing container and waits for PING on its port.
func (c *container) start(ctx context.Context) error {
	if err := c.d.client.StartContainerWithContext(c.id, nil, ctx); err != nil {
		return fmt.Errorf("start container of %s on %s: %w", c.name, c.Addr(), err)
	}
	info, err := c.d.client.InspectContainerWithContext(c.id, ctx)
	if err != nil {
		return fmt.Errorf("inspect container of %s: %w", c.name, err)
	}
	ip := ""
	if ns := info.NetworkSettings; ns != nil {
		if ep, ok := ns.Networks[c.d.network.Name]; ok {
			ip = ep.IPAddress
		}
	}
	c.mu.Lock()
	old := c.ip
	c.ip, c.pid, c.paused = ip, info.State.Pid, false
	c.mu.Unlock()
	to := ip
	if c.created.Sentinel != "" {
		to = "" // a Sentinel is no node a connection is told to come from
	}
	c.d.owners.move(old, to, c.name)
	if err := waitPing(ctx, c.Addr(), nil, 15*time.Second); err != nil {
		return fmt.Errorf("start container of %s on %s: %w%s", c.name, c.Addr(), err, c.logTail())
	}
	return nil
}

// logTail is the last line the container's server wrote.
func (c *container) logTail() string {
	var out bytes.Buffer
	err := c.d.client.Logs(dc.LogsOptions{Container: c.id, OutputStream: &out, ErrorStream: &out,
		Stdout: true, Stderr: true, Tail: "1"})
	if err != nil || out.Len() == 0 {
		return ""
	}
	return " (log: " + strings.TrimSpace(out.String()) + ")"
}

// Pause freezes the container (docker pause).
func (c *container) Pause(context.Context) error {
	return c.setPaused(c.d.client.PauseContainer, true)
}

// Resume thaws it (docker unpause).
func (c *container) Resume(context.Context) error {
	return c.setPaused(c.d.client.UnpauseContainer, false)
}

// setPaused asks the engine to (un)pause the container with call and, when
// it did, records paused.
func (c *container) setPaused(call func(id string) error, paused bool) error {
	if err := call(c.ident()); err != nil {
		return err
	}
	c.mu.Lock()
	c.paused = paused
	c.mu.Unlock()
	return nil
}

func (c *container) ident() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

// Kill sends SIGKILL and waits until the container has stopped. A paused
// container is thawed first: the engine refuses to kill it frozen.
func (c *container) Kill(ctx context.Context) error {
	c.mu.Lock()
	id, paused, running := c.id, c.paused, c.pid != 0
	c.mu.Unlock()
	if id == "" || !running {
		return nil
	}
	if paused {
		_ = c.d.client.UnpauseContainer(id)
	}
	err := c.d.client.KillContainer(dc.KillContainerOptions{ID: id, Signal: dc.SIGKILL, Context: ctx})
	var notRunning *dc.ContainerNotRunning
	if err != nil && !errors.As(err, &notRunning) {
		return err
	}
	if _, err := c.d.client.WaitContainerWithContext(id, ctx); err != nil {
		return fmt.Errorf("wait for the container of %s to stop: %w", c.name, err)
	}
	c.mu.Lock()
	c.pid, c.paused = 0, false
	c.mu.Unlock()
	return nil
}

// Restart brings the server back on the same port. With AOF persistence
// unchanged since the container was made, the same container starts again
// and replays its AOF; otherwise (no persistence, or another setting) a
// fresh container replaces it: an empty server.
func (c *container) Restart(ctx context.Context, spec NodeSpec) error {
	if err := c.Kill(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	same := c.id != "" && spec.Persistence != PersistNone && spec.Persistence == c.created.Persistence &&
		slices.Equal(spec.Args, c.created.Args)
	c.mu.Unlock()
	if same {
		return c.start(ctx)
	}
	c.drop(ctx)
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		// The engine may hold the port a moment after the old container went.
		if err = c.create(ctx, spec); err == nil || !isPortTaken(err) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// drop removes the container (and its data).
func (c *container) drop(ctx context.Context) {
	_ = c.Remove(ctx)
}

// Remove implements Server.
func (c *container) Remove(ctx context.Context) error {
	c.mu.Lock()
	id, ip := c.id, c.ip
	c.id, c.ip, c.pid, c.paused = "", "", 0, false
	c.mu.Unlock()
	if id == "" {
		return nil
	}
	c.d.owners.move(ip, "", c.name)
	err := c.d.client.RemoveContainer(dc.RemoveContainerOptions{ID: id, Force: true, RemoveVolumes: true, Context: ctx})
	var gone *dc.NoSuchContainer
	if err != nil && !errors.As(err, &gone) {
		return fmt.Errorf("remove container of %s: %w", c.name, err)
	}
	return nil
}
