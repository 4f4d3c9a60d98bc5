package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// HarnessPidFile is the file in each temp dir of the local backend naming
// the harness process that made it, so that `torture clean` can tell the
// dirs of a dead run from those of a live one.
const HarnessPidFile = "locktorture.pid"

// TempDirPrefix starts the name of every temp dir the local backend makes.
const TempDirPrefix = "locktorture-"

// Processes is the local backend: real redis-server processes on free
// 127.0.0.1 ports, each in its own directory, bound to the harness so that
// a harness killed with -9 takes its servers with it.
type Processes struct {
	bin    string
	dir    string
	ownDir bool

	owners owners // source IP -> node name
}

// NewProcesses prepares a local backend from opts (RedisServer, Dir).
func NewProcesses(opts Options) (*Processes, error) {
	bin, err := FindRedisServer(opts.RedisServer)
	if err != nil {
		return nil, err
	}
	p := &Processes{bin: bin, dir: opts.Dir}
	if p.dir == "" {
		d, err := os.MkdirTemp("", TempDirPrefix)
		if err != nil {
			return nil, fmt.Errorf("make temp dir: %w", err)
		}
		p.dir, p.ownDir = d, true
		pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
		if err := os.WriteFile(filepath.Join(d, HarnessPidFile), pid, 0o644); err != nil {
			os.RemoveAll(d)
			return nil, fmt.Errorf("write %s: %w", HarnessPidFile, err)
		}
	}
	return p, nil
}

// Name implements Backend.
func (p *Processes) Name() string { return "local" }

// HarnessIP implements Backend: every process shares the loopback.
func (p *Processes) HarnessIP() string { return "127.0.0.1" }

// Owner implements Backend: by the bind-source-addr each node was given.
func (p *Processes) Owner(ip net.IP) (string, bool) { return p.owners.lookup(ip) }

// Dir is the directory holding every node's files.
func (p *Processes) Dir() string { return p.dir }

// Close removes the temp dir the backend made.
func (p *Processes) Close() error {
	if p.ownDir {
		return os.RemoveAll(p.dir)
	}
	return nil
}

// Start implements Backend.
func (p *Processes) Start(ctx context.Context, spec NodeSpec) (Server, error) {
	dir := filepath.Join(p.dir, spec.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make dir for %s: %w", spec.Name, err)
	}
	if spec.SourceIP != "" {
		p.owners.set(spec.SourceIP, spec.Name)
	}
	s := &process{name: spec.Name, dir: dir, bin: p.bin}
	err := onFreePort(func(port int) error {
		s.port = port
		err := s.start(ctx, spec)
		if err != nil {
			s.kill()
		}
		return err
	}, func(err error) bool {
		return strings.Contains(err.Error(), "in use") || strings.Contains(err.Error(), "exited at start")
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// process is one redis-server (or Sentinel) child of the harness.
type process struct {
	name string
	port int
	dir  string
	bin  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

func (s *process) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }
func (s *process) Dir() string  { return s.dir }

func (s *process) args(spec NodeSpec) []string {
	a := []string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--protected-mode", "no", "--daemonize", "no", "--save", "",
		"--logfile", filepath.Join(s.dir, "redis.log"), "--dbfilename", "dump.rdb",
	}
	switch spec.Persistence {
	case PersistEverysec, PersistAlways:
		a = append(a, "--appendonly", "yes", "--appendfsync", string(spec.Persistence))
	default:
		a = append(a, "--appendonly", "no")
	}
	if spec.SourceIP != "" {
		a = append(a, "--bind-source-addr", spec.SourceIP)
	}
	return append(a, spec.Args...)
}

// start launches the process and waits for PING.
func (s *process) start(ctx context.Context, spec NodeSpec) error {
	argv := []string{s.bin}
	if spec.Sentinel != "" {
		conf := filepath.Join(s.dir, "sentinel.conf")
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\ndir %s\nlogfile %s\n%s",
			s.port, s.dir, filepath.Join(s.dir, "redis.log"), spec.Sentinel)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", conf, err)
		}
		argv = append(argv, conf, "--sentinel")
	} else {
		argv = append(argv, s.args(spec)...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.dir
	if len(spec.Env) > 0 {
		cmd.Env = append(os.Environ(), spec.Env...)
	}
	// Bound to the harness: if it dies, the kernel kills the server too.
	cmd.SysProcAttr = boundToHarness()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis %s on %s: %w", s.name, s.Addr(), err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	if err := waitPing(ctx, s.Addr(), exited, 10*time.Second); err != nil {
		return fmt.Errorf("start redis %s on %s: %w%s", s.name, s.Addr(), err, logTail(s.dir))
	}
	return nil
}

func logTail(dir string) string {
	if line := lastLogLine(dir, ""); line != "" {
		return " (log: " + line + ")"
	}
	return ""
}

// lastLogLine is the last line of the server's log in dir that contains
// word, "" when there is none or the log cannot be read.
func lastLogLine(dir, word string) string {
	b, err := os.ReadFile(filepath.Join(dir, "redis.log"))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], word) {
			return strings.TrimSpace(lines[i])
		}
	}
	return ""
}

func waitPing(ctx context.Context, addr string, exited <-chan struct{}, timeout time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, PoolSize: 1})
	defer c.Close()
	deadline := time.Now().Add(timeout)
	for {
		if err := c.Ping(ctx).Err(); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("no PING reply after %s: %v", timeout, err)
		}
		select {
		case <-exited:
			return errors.New("server exited at start (address in use?)")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *process) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	select {
	case <-s.exited:
		return 0
	default:
		return s.cmd.Process.Pid
	}
}

func (s *process) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return errors.New("not running")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %v: %w", sig, err)
	}
	return nil
}

// Pause stops the server (SIGSTOP).
func (s *process) Pause(context.Context) error { return s.signal(syscall.SIGSTOP) }

// Resume continues it (SIGCONT).
func (s *process) Resume(context.Context) error { return s.signal(syscall.SIGCONT) }

// Kill SIGKILLs the server and waits for it to exit.
func (s *process) Kill(context.Context) error {
	s.kill()
	return nil
}

func (s *process) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Kill()
	if exited != nil {
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
	}
}

// Restart starts the server again on the same port and directory: what it
// recovers is what its persistence wrote there.
func (s *process) Restart(ctx context.Context, spec NodeSpec) error {
	s.kill()
	return s.start(ctx, spec)
}

// Remove kills it; its files go with the backend's dir.
func (s *process) Remove(context.Context) error {
	s.kill()
	return nil
}

// WriteFile implements FileServer: write then rename, so that the server
// never reads half a file.
func (s *process) WriteFile(_ context.Context, name string, data []byte) error {
	path := filepath.Join(s.dir, name)
	if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
		return fmt.Errorf("write %s of %s: %w", name, s.name, err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("write %s of %s: %w", name, s.name, err)
	}
	return nil
}

// ReadFile implements FileServer.
func (s *process) ReadFile(_ context.Context, name string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", name, s.name, err)
	}
	return b, nil
}
