package program

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locktorture/locktorture/internal/procmark"
	"github.com/locktorture/locktorture/locks"
)

// Command is a lock program: what to run and what to add to its environment.
type Command struct {
	Argv []string
	Env  []string
	// Show is how messages name the command; default Argv joined.
	Show string
}

func (c Command) show() string {
	if c.Show != "" {
		return c.Show
	}
	return strings.Join(c.Argv, " ")
}

// handshakeTimeout bounds a program's start and hello: an interpreter
// starting on a loaded machine takes a while, a program that never answers
// must not stall the run.
const handshakeTimeout = 20 * time.Second

// defaultCommandTimeout stands for "the library's default" in the bounds
// below: go-redis's own read timeout.
const defaultCommandTimeout = 3 * time.Second

// maxLine bounds one line of a program's output.
const maxLine = 1 << 20

// Lock is the harness's side of one lock program process: a locks.Lock
// whose every call is a request on the program's stdin and whose outcome is
// the program's reply. It implements workloads.Signaled, so that the
// client's gate pauses and kills the process, and locks.Closer.
type Lock struct {
	cfg    locks.Config
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tail
	reaped chan struct{} // closed once the process is reaped
	hello  chan message  // the program's hello, once

	wmu sync.Mutex // one line at a time on stdin

	mu       sync.Mutex
	label    string // "client 2: lock program redis-py"
	name     string // name and version from the hello
	greeted  bool   // the hello came (only the reader goroutine touches it)
	promises Promises
	// stamps: the program's steps carry its CLOCK_MONOTONIC reading (its
	// hello's monotonic) and this machine can map it onto the harness's
	// clock: a request may then let its steps go unawaited.
	stamps bool
	clock  monoClock
	// started is when the process was started: the earliest a reading of
	// a step that serves no request can be.
	started time.Time
	// keyTemplate is the hello's key_template: the key the lock writes
	// for a requested one, {key} standing for it.
	keyTemplate string
	nextID      int64
	pending     map[int64]*call
	steps       map[int64]time.Time // when each step's go was sent
	stepLog     []int64             // steps in order, to forget old ones
	leases      map[string]*locks.Lease
	renewals    map[int64]func(error)
	killed      bool
	broken      error // the protocol violation or exit that ends the run
	pausedAt    time.Time
	paused      time.Duration // total time stopped, so bounds count only running time
	bg          context.Context
	cancelBg    context.CancelFunc
	// replied ends the try of each acquire's last step, by request; only
	// the reader goroutine touches it.
	replied map[int64]func()
}

type call struct {
	ctx   context.Context
	req   Request
	reply chan message
	// written is when the harness began to write the request: the
	// earliest a reading of one of its steps can be.
	written time.Time
}

// New starts the program for one client and completes the handshake. Every
// error is a *locks.FatalError: a program that cannot start or speak the
// protocol fails the run with one line.
func New(c Command, cfg locks.Config) (*Lock, error) {
	label := fmt.Sprintf("%s: lock program `%s`", clientsLabel(cfg), c.show())
	fatal := func(format string, args ...any) error {
		return &locks.FatalError{Err: fmt.Errorf(label+": "+format, args...)}
	}
	switch {
	case len(c.Argv) == 0:
		return nil, fatal("no command")
	case cfg.TTL <= 0:
		return nil, fatal("needs a positive ttl")
	case cfg.Routes.Empty():
		return nil, fatal("a lock program needs to be told where the servers are, which topology %q does not say (a user's own Sentinels do not: use the harness's sentinel topology)", cfg.Routes.Topology)
	case cfg.Rand == nil || cfg.NewToken == nil:
		return nil, fatal("config needs Rand and NewToken")
	}
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Env = append(append(os.Environ(), procmark.HarnessPID+"="+strconv.Itoa(os.Getpid())), c.Env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fatal("stdin: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fatal("stdout: %v", err)
	}
	l := &Lock{cfg: cfg, cmd: cmd, stdin: stdin, stderr: &tail{}, reaped: make(chan struct{}),
		hello: make(chan message, 1), label: label, pending: map[int64]*call{}, steps: map[int64]time.Time{},
		leases: map[string]*locks.Lease{}, renewals: map[int64]func(error){}, replied: map[int64]func(){}}
	l.bg, l.cancelBg = context.WithCancel(context.Background())
	l.clock, l.started = newMonoClock(), time.Now()
	cmd.Stderr = l.stderr
	if err := start(cmd, l.reaped); err != nil {
		return nil, fatal("cannot start: %v", err)
	}
	go l.read(stdout)
	if err := l.handshake(); err != nil {
		l.Kill()
		<-l.reaped
		l.cancelBg()
		return nil, &locks.FatalError{Err: err}
	}
	return l, nil
}

func (l *Lock) handshake() error {
	cfg := l.cfg
	r := Retry{FirstMs: 1, MaxMs: cfg.RetryDelayOrDefault().Milliseconds(), Jitter: 0.5}
	if cfg.RetryDelay > 0 {
		r.FirstMs = r.MaxMs
	}
	want := Version
	if shared(cfg) {
		want = VersionShared
	}
	h := Hello{Type: typeHello, Protocol: want, Client: cfg.Client, Topology: cfg.Routes.Topology, Addrs: cfg.Routes.Addrs,
		Sentinels: cfg.Routes.Sentinels, MasterName: cfg.Routes.MasterName, AddrMap: cfg.Routes.AddrMap, TTLMs: cfg.TTL.Milliseconds(),
		WaitMs: cfg.Wait.Milliseconds(), Retry: r, CommandTimeoutMs: cfg.CommandTimeout.Milliseconds(), RedisRetries: cfg.RedisRetries, Seed: cfg.Rand.Int63(),
		AwaitGo: true}
	if want == VersionShared {
		h.Clients = cfg.Clients
	}
	if err := l.send(h); err != nil {
		return l.deadErr("during the handshake", "a hello line")
	}
	t := time.NewTimer(handshakeTimeout)
	defer t.Stop()
	select {
	case m := <-l.hello:
		l.mu.Lock()
		defer l.mu.Unlock()
		if err := l.checkVersion(m, want); err != nil {
			return err
		}
		if m.Name == "" {
			return fmt.Errorf(`%s: its hello has no "name"; expected the lock's name`, l.label)
		}
		l.label = fmt.Sprintf("%s: lock program %s", clientsLabel(cfg), m.Name)
		if err := expressible(cfg, m); err != nil {
			return fmt.Errorf("%s: %w", l.label, err)
		}
		if err := servable(cfg, m); err != nil {
			return fmt.Errorf("%s: %w", l.label, err)
		}
		l.keyTemplate = m.KeyTemplate
		l.promises = m.Promises
		l.stamps = m.Monotonic && l.clock.ok
		l.name = strings.TrimSpace(m.Name + " " + m.Version)
		return nil
	case <-l.reaped:
		return l.deadErr("during the handshake", "a hello line")
	case <-t.C:
		return fmt.Errorf("%s: no hello within %v; expected a hello line", l.label, handshakeTimeout)
	}
}

// checkVersion refuses a hello that answered another version than want:
// a program of version 1 under --share says so in words.
func (l *Lock) checkVersion(m message, want int) error {
	switch {
	case m.Protocol != nil && *m.Protocol == want:
		return nil
	case m.Protocol != nil && *m.Protocol == Version && want == VersionShared:
		name := m.Name
		if name == "" {
			name = "`" + strings.Join(l.cmd.Args, " ") + "`"
		}
		return fmt.Errorf("%s: lock program %s speaks protocol %d; --share %d needs one that speaks protocol %d (serves several clients at once)",
			clientsLabel(l.cfg), name, Version, len(l.cfg.Clients), VersionShared)
	}
	got := "no protocol"
	if m.Protocol != nil {
		got = fmt.Sprintf("protocol %d", *m.Protocol)
	}
	return fmt.Errorf("%s: its hello answered %s; expected protocol %d", l.label, got, want)
}

// shared reports whether the lock serves several clients at once (--share):
// protocol version 2.
func shared(cfg locks.Config) bool { return len(cfg.Clients) > 1 }

// clientsLabel names the clients a program serves in messages.
func clientsLabel(cfg locks.Config) string {
	if !shared(cfg) {
		return fmt.Sprintf("client %d", cfg.Client)
	}
	s := make([]string, len(cfg.Clients))
	for i, c := range cfg.Clients {
		s[i] = strconv.Itoa(c)
	}
	return "clients " + strings.Join(s, ",")
}

// expressible refuses a run whose TTL or fixed retry pause the program's
// lock cannot set (its hello's granularities): the history would record a
// TTL the lock never used.
func expressible(cfg locks.Config, m message) error {
	checks := []struct {
		field, flag string
		gran        int64
		d           time.Duration
	}{
		{"ttl_granularity_ms", "--ttl", m.TTLGranularityMs, cfg.TTL},
		{"retry_granularity_ms", "--retry-delay", m.RetryGranularityMs, cfg.RetryDelay},
	}
	for _, c := range checks {
		switch {
		case c.gran < 0:
			return fmt.Errorf("its hello has %s %d; expected a positive number of milliseconds or none", c.field, c.gran)
		case c.gran == 0 || c.d <= 0:
		case c.d%(time.Duration(c.gran)*time.Millisecond) != 0:
			return fmt.Errorf("%s %v cannot be expressed: the lock sets whole multiples of %dms (its hello's %s); use a multiple of it",
				c.flag, c.d, c.gran, c.field)
		}
	}
	return nil
}

// maxKeyTemplate bounds a hello's key_template.
const maxKeyTemplate = 512

// servable refuses a hello that says the program cannot serve the run's
// topology, or whose key template names no key.
func servable(cfg locks.Config, m message) error {
	if len(m.Topologies) > 0 && !slices.Contains(m.Topologies, cfg.Routes.Topology) {
		return fmt.Errorf("%w %s: it serves %s (its hello's topologies)", locks.ErrNotServed, cfg.Routes.Topology, strings.Join(m.Topologies, ", "))
	}
	if t := m.KeyTemplate; t != "" && (!strings.Contains(t, "{key}") || len(t) > maxKeyTemplate) {
		return fmt.Errorf("its hello has key_template %q; expected at most %d bytes holding {key}", t, maxKeyTemplate)
	}
	return nil
}

// StoredKey implements locks.KeyNamer: the key the program says, in its
// hello's key_template, that its lock writes for key.
func (l *Lock) StoredKey(key string) string {
	l.mu.Lock()
	t := l.keyTemplate
	l.mu.Unlock()
	if t == "" {
		return key
	}
	return strings.ReplaceAll(t, "{key}", key)
}

// Name is the program's name and version from its hello.
func (l *Lock) Name() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.name
}

func (l *Lock) send(v any) error { return writeLine(&l.wmu, l.stdin, v) }

// deadErr is the error of a call to a process that is gone: a crash the
// harness made, or the program's own exit or violation, which ends the run.
func (l *Lock) deadErr(when, expected string) error {
	select {
	case <-l.reaped:
	case <-time.After(time.Second):
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return &locks.FatalError{Err: l.broken}
	}
	if l.killed {
		return locks.ErrCrashed
	}
	return &locks.FatalError{Err: fmt.Errorf("%s: stopped reading its stdin %s; expected %s", l.label, when, expected)}
}

// Stop implements workloads.Signaled: SIGSTOP of the whole program.
func (l *Lock) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pausedAt.IsZero() && !l.killed {
		l.pausedAt = time.Now()
		signal(l.cmd.Process.Pid, syscall.SIGSTOP)
	}
}

// Continue implements workloads.Signaled: SIGCONT.
func (l *Lock) Continue() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.pausedAt.IsZero() {
		l.paused += time.Since(l.pausedAt)
		l.pausedAt = time.Time{}
		signal(l.cmd.Process.Pid, syscall.SIGCONT)
	}
}

// Kill implements workloads.Signaled: SIGKILL, as a crash.
func (l *Lock) Kill() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kill()
}

func (l *Lock) kill() {
	select {
	case <-l.reaped:
		return
	default:
	}
	l.killed = true
	signal(l.cmd.Process.Pid, syscall.SIGKILL)
}

// pausedSoFar is the time the process has spent stopped.
func (l *Lock) pausedSoFar() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.paused
	if !l.pausedAt.IsZero() {
		d += time.Since(l.pausedAt)
	}
	return d
}

// Close implements locks.Closer: the process is killed (its keys stay in
// Redis, as after kill -9) and reaped.
func (l *Lock) Close() error {
	l.Kill()
	select {
	case <-l.reaped:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s: not reaped 10s after SIGKILL", l.label)
	}
	l.cancelBg()
	return nil
}

// tail keeps the end of a program's stderr for error messages: the last
// line alone is often a banner or a summary, the cause a few lines above it
// (a stack trace, say).
type tail struct {
	mu  sync.Mutex
	buf []byte
}

// tailLines is how many of its last stderr lines a failed program's
// error shows; tailBytes bounds what is kept to find them.
const (
	tailLines = 20
	tailBytes = 16 << 10
)

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > tailBytes {
		t.buf = t.buf[len(t.buf)-tailBytes:]
	}
	return len(b), nil
}

// last is the last tailLines non-empty lines written, each trimmed to 200
// bytes, joined by " | " so that the error stays one line.
func (t *tail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var keep []string
	for _, s := range strings.Split(string(t.buf), "\n") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if len(s) > 200 {
			s = s[:200] + "..."
		}
		keep = append(keep, s)
	}
	if len(keep) > tailLines {
		keep = keep[len(keep)-tailLines:]
	}
	return strings.Join(keep, " | ")
}

// read reads the program's lines until it exits, then reaps it. A line that
// breaks the protocol ends the program and, through every call after, the
// run.
func (l *Lock) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	n := 0
	for sc.Scan() {
		n++
		read := time.Now() // no later than the program wrote the line
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		if err := l.handle(line, read); err != nil {
			l.breakWith(fmt.Errorf("%s: line %d %s: %w", l.labelNow(), n, quote(line), err))
			break
		}
	}
	if err := sc.Err(); err != nil {
		l.breakWith(fmt.Errorf("%s: line %d: %v; expected lines of at most %d bytes", l.labelNow(), n+1, err, maxLine))
	}
	_, _ = io.Copy(io.Discard, stdout)
	err := l.cmd.Wait()
	l.mu.Lock()
	if !l.killed && l.broken == nil {
		how := "exited"
		if err != nil {
			how = err.Error()
		}
		if s := l.stderr.last(); s != "" {
			how += fmt.Sprintf("; the end of its stderr: %s", s)
		}
		l.broken = fmt.Errorf("%s: ended on its own (%s); expected it to run until the harness closes its stdin", l.label, how)
	}
	l.mu.Unlock()
	close(l.reaped)
}

func (l *Lock) labelNow() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.label
}

func (l *Lock) breakWith(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken == nil && !l.killed {
		l.broken = err
	}
	l.kill()
}
