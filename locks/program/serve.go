package program

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/locks"
)

// ServeEnv, set in a binary's environment, makes it a lock program: it
// serves the built-in lock it names on stdin and stdout and exits (see
// init). It is how the reference client runs out of process from whatever
// binary the harness is: the torture command, or a `go test` binary calling
// locktorture.Run, which has no main of ours to dispatch from.
const ServeEnv = "LOCKTORTURE_SERVE_LOCK"

// init turns the process into a lock program when ServeEnv asks for one,
// before any main or test runs. Any binary that links this package can
// therefore be started as the reference client with its own path.
func init() {
	if name := os.Getenv(ServeEnv); name != "" {
		// init runs on the main goroutine, which the runtime locks to the
		// main thread until main starts: served from it, every wait for a
		// line or a reply would hand the thread over and back (two futex
		// calls and two context switches), most of what a request cost. So
		// the program runs on a goroutine of its own, and this one waits.
		go func() { os.Exit(serveMain(name)) }()
		select {}
	}
}

func serveMain(name string) int {
	e, err := locks.Builtin().Get(name)
	if err == nil {
		in, out := pollable(os.Stdin), pollable(os.Stdout)
		err = Serve(context.Background(), in, out, e)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "lock program %s: %v\n", name, err)
		return 1
	}
	return 0
}

// pollable reopens a pipe of the process in non-blocking mode, so the Go
// runtime waits on it in its poller: a blocking read of stdin holds an OS
// thread, and each line then costs the runtime a handoff of its processor,
// which measured at most of a request's time.
func pollable(f *os.File) *os.File {
	fd := f.Fd() // which leaves it blocking: set it back
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		return f
	}
	return os.NewFile(fd, f.Name())
}

// Program is a Go lock served as a lock program, as its own binary: a
// module of its own can then pin any version of the library it wraps, and
// the harness that runs it needs none. Its hello names it Entry.Name at
// Version and makes Promises; Entry.Topologies are the topologies it says
// it serves.
type Program struct {
	Entry    locks.Entry
	Version  string
	Promises Promises
	// TTLGranularity, when set, says the library sets TTLs in whole
	// multiples of it (a second for one that takes seconds): the harness
	// refuses a --ttl it cannot express instead of testing another.
	TTLGranularity time.Duration
}

// Main serves p on the process's stdin and stdout and exits: a Go lock
// program's whole main. What the library prints on stdout goes to stderr
// instead, since stdout carries the protocol alone.
func Main(p Program) {
	stdout := os.Stdout
	in, out := pollable(os.Stdin), pollable(stdout)
	os.Stdout = os.Stderr
	err := p.Serve(context.Background(), in, out)
	// The protocol's own file is another *os.File over fd 1: were the
	// first one collected meanwhile, its finalizer would close the fd
	// under the protocol.
	runtime.KeepAlive(stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lock program %s: %v\n", p.Entry.Name, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// ModuleVersion is the version of module the running binary holds, from
// its build information ("unknown" when it does not say): a program built
// against a pinned library gives it as its hello's version, and the
// history's header names the lock by it.
func ModuleVersion(module string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == module {
				if d.Replace != nil {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return "unknown"
}

// Serve runs entry's lock as a lock program: the hello on in, then one
// request after the other until in ends. It is the program side of the
// protocol for a Go lock, and the reference the spec's other clients can be
// read against: every command the lock sends comes after a step that carries
// the program's CLOCK_MONOTONIC reading, and waits for the harness's go
// where the request asks it to.
func Serve(ctx context.Context, in io.Reader, out io.Writer, entry locks.Entry) error {
	return Program{Entry: entry, Version: "1"}.serveAs(ctx, in, out, "exec-"+entry.Name)
}

// Serve runs p as a lock program on in and out (see Main).
func (p Program) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	return p.serveAs(ctx, in, out, p.Entry.Name)
}

func (p Program) serveAs(ctx context.Context, in io.Reader, out io.Writer, name string) error {
	entry := p.Entry
	s := &server{out: out, goes: map[int64]chan struct{}{}, leases: map[string]*locks.Lease{}, promises: p.Promises}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	if !sc.Scan() {
		return fmt.Errorf("no hello: %v", sc.Err())
	}
	var h Hello
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Type != typeHello {
		return fmt.Errorf("first line %s: expected the hello", quote(sc.Bytes()))
	}
	if h.Protocol < Version {
		return fmt.Errorf("the harness speaks protocol %d; this program speaks %d", h.Protocol, Version)
	}
	// Version 2 (--share): one lock object serves every client of the
	// hello, each client's requests on a goroutine of its own.
	proto := min(h.Protocol, VersionShared)
	s.shared = proto == VersionShared
	s.client = h.Client
	s.await = h.AwaitGo
	_, clockErr := monoNow()
	lk, nodes, err := s.build(h, entry)
	if err != nil {
		return err
	}
	defer func() {
		for _, n := range nodes {
			_ = n.Close()
		}
	}()
	hello := map[string]any{"type": typeHello, "protocol": proto, "name": name,
		"version": p.Version, "promises": p.Promises, "skips_go": true, "monotonic": clockErr == nil}
	if len(entry.Topologies) > 0 {
		hello["topologies"] = entry.Topologies
	}
	if p.TTLGranularity > 0 {
		hello["ttl_granularity_ms"] = p.TTLGranularity.Milliseconds()
	}
	if t := locks.StoredKey(lk, keyPlaceholder); t != keyPlaceholder && strings.Contains(t, keyPlaceholder) {
		hello["key_template"] = t
	}
	if err := s.write(hello); err != nil {
		return err
	}
	w := s.newWorkers(ctx, lk)
	defer w.close()
	for sc.Scan() {
		var m struct {
			Request
			Step int64 `json:"step"`
			// AwaitGo is the request's choice; missing: the hello's.
			AwaitGo *bool `json:"await_go"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return fmt.Errorf("line %s: %v", quote(sc.Bytes()), err)
		}
		switch m.Type {
		case typeGo:
			s.release(m.Step)
		case typeAcquire, typeRelease:
			m.Request.AwaitGo = s.await
			if m.AwaitGo != nil {
				m.Request.AwaitGo = *m.AwaitGo
			}
			if err := w.send(m.Request); err != nil {
				return err
			}
		default:
			return fmt.Errorf("line %s: unknown type", quote(sc.Bytes()))
		}
	}
	return sc.Err()
}

// keyPlaceholder stands for the requested key in a hello's key_template.
const keyPlaceholder = "{key}"

// server is the program side's state.
type server struct {
	wmu  sync.Mutex
	out  io.Writer
	held []byte // step lines to go out with the next line (writeOrHold)

	mu     sync.Mutex
	nstep  int64
	goes   map[int64]chan struct{}
	token  string // version 1: the token the harness gave the running acquire
	leases map[string]*locks.Lease
	nrenew int64
	ntoken int64
	await  bool // the hello's await_go: a request's default
	// shared: version 2, requests of several clients at once; client is
	// the hello's, which names the tokens this program makes.
	shared bool
	client int
	// promises are the hello's: a grant carries the lease's fence and
	// validity only when promised.
	promises Promises
	ttl      time.Duration // the hello's; a lease written with another says so
}

type stepAt struct {
	n  int64
	at time.Time
}

// served is one request being served: the steps it sent, for a refusal's
// step numbers. The request's context carries it.
type served struct {
	id int64
	// await: the request's steps wait for their go (its await_go).
	await bool
	sent  []stepAt
	// replied: the request was answered; a step made under its context
	// afterwards (a watchdog started by its acquire) is background work.
	replied bool
}

type reqKey struct{}

// servedOf is the request a context serves, nil outside one.
func servedOf(ctx context.Context) *served {
	c, _ := ctx.Value(reqKey{}).(*served)
	return c
}

// newToken is the lock's Config.NewToken. In version 1 one request runs
// at a time and its token is the harness's; in version 2 several acquires
// of one lock object run at once, and the token it writes is made here,
// unique in the run, and named in the reply.
func (s *server) newToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.shared {
		return s.token
	}
	s.ntoken++
	return fmt.Sprintf("c%d-x%d", s.client, s.ntoken)
}

func (s *server) build(h Hello, entry locks.Entry) (locks.Lock, []redis.UniversalClient, error) {
	timeout := time.Duration(h.CommandTimeoutMs) * time.Millisecond
	nodes := connect(h, timeout)
	cfg := locks.Config{Nodes: nodes, Routes: routes(h), RedisRetries: h.RedisRetries, TTL: time.Duration(h.TTLMs) * time.Millisecond,
		Wait: time.Duration(h.WaitMs) * time.Millisecond, CommandTimeout: timeout,
		Rand: rand.New(rand.NewSource(h.Seed)), Client: h.Client,
		NewToken: s.newToken,
		Hooks:    locks.Hooks{Step: s.step, Renew: s.renew}}
	if h.Topology == "single" || h.Topology == "redlock" {
		// A library with a client of its own dials the masters itself.
		cfg.Addrs, cfg.Dial = h.Addrs, dialer(h)
	}
	if h.Retry.FirstMs == h.Retry.MaxMs {
		cfg.RetryDelay = time.Duration(h.Retry.MaxMs) * time.Millisecond
	}
	s.ttl = cfg.TTL
	lk, err := entry.New(cfg)
	if err != nil {
		for _, n := range nodes {
			_ = n.Close()
		}
		return nil, nil, fmt.Errorf("build lock %s: %w", entry.Name, err)
	}
	return lk, nodes, nil
}

// connect opens the lock's go-redis clients as the hello says: one per
// master on single and redlock, a Sentinel-aware failover client on
// sentinel, a cluster client on cluster. The last two dial every address a
// server announces through the hello's map, so that no connection leaves
// the harness's proxies.
func connect(h Hello, timeout time.Duration) []redis.UniversalClient {
	dial := dialer(h)
	var dt, rt, wt time.Duration
	if timeout > 0 {
		dt, rt, wt = timeout, timeout, timeout
	}
	retries := 0 // go-redis's own default
	if h.RedisRetries != nil {
		retries = *h.RedisRetries
	}
	switch h.Topology {
	case "sentinel":
		return []redis.UniversalClient{redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: h.MasterName, SentinelAddrs: h.Sentinels, Dialer: dial, Protocol: 2, MaxRetries: retries,
			DialTimeout: dt, ReadTimeout: rt, WriteTimeout: wt})}
	case "cluster":
		return []redis.UniversalClient{redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: h.Addrs, Dialer: dial, Protocol: 2, MaxRetries: retries, DialTimeout: dt, ReadTimeout: rt, WriteTimeout: wt})}
	}
	var nodes []redis.UniversalClient
	for _, a := range h.Addrs {
		nodes = append(nodes, redis.NewClient(&redis.Options{Addr: a, Protocol: 2, MaxRetries: retries,
			DialTimeout: dt, ReadTimeout: rt, WriteTimeout: wt}))
	}
	return nodes
}

// dialer dials an address as the hello says: an address a server
// announced through the hello's map, any other as it is.
func dialer(h Hello) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if a, ok := h.AddrMap[addr]; ok {
			addr = a
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// routes are the hello's addresses as a lock's Config carries them.
func routes(h Hello) locks.Routes {
	return locks.Routes{Topology: h.Topology, Addrs: h.Addrs, Sentinels: h.Sentinels, MasterName: h.MasterName, AddrMap: h.AddrMap}
}

// write writes v as one line, after any step lines held back.
func (s *server) write(v any) error { return s.writeOrHold(v, false) }

// writeOrHold writes v as one line, or with hold keeps it for the next
// write: a step whose command does not wait for its go (its request's
// await_go false) goes out with the request's reply, or whatever line
// comes next, in one write. Its reading was taken before its command, and
// the harness dates it by that alone, so the step loses nothing by coming
// late, and the harness wakes once a request instead of twice.
func (s *server) writeOrHold(v any, hold bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.held = append(append(s.held, b...), '\n')
	if hold {
		return nil
	}
	_, err = s.out.Write(s.held)
	s.held = s.held[:0]
	return err
}

// work runs one client's requests one after the other.
func (s *server) work(ctx context.Context, lk locks.Lock, reqs <-chan Request) error {
	for r := range reqs {
		c := &served{id: r.ID, await: r.AwaitGo}
		rctx := context.WithValue(ctx, reqKey{}, c)
		if r.Client != nil {
			// A lock shared by several clients learns which one calls,
			// as an in-process lock does (locks.ClientFrom).
			rctx = locks.WithClient(rctx, *r.Client)
		}
		if !s.shared {
			s.mu.Lock()
			s.token = r.Token
			s.mu.Unlock()
		}
		reply := map[string]any{"type": typeReply, "id": r.ID}
		if r.Type == typeAcquire {
			lease, err := lk.Acquire(rctx, r.Key)
			s.acquired(reply, c, lease, err)
		} else {
			s.mu.Lock()
			lease := s.leases[r.Token]
			delete(s.leases, r.Token)
			s.mu.Unlock()
			if lease == nil {
				lease = &locks.Lease{Key: r.Key, Token: r.Token}
			}
			deleted, err := lk.Release(rctx, lease)
			switch {
			case err != nil:
				reply["outcome"], reply["error"] = outUnknown, err.Error()
			case deleted:
				reply["outcome"] = outDeleted
			default:
				reply["outcome"] = outNotDeleted
			}
		}
		s.mu.Lock()
		c.replied = true
		s.mu.Unlock()
		if err := s.write(reply); err != nil {
			return err
		}
	}
	return nil
}

// acquired fills an acquire's reply from the lock's outcome.
func (s *server) acquired(reply map[string]any, c *served, lease *locks.Lease, err error) {
	var ref *locks.RefusedError
	switch {
	case err == nil:
		reply["outcome"], reply["token"] = outGranted, lease.Token
		if lease.Stored != "" {
			reply["key"] = lease.Stored
		}
		if !lease.Sent.IsZero() {
			// The lock named its writing command (not its last): the
			// lease began at the step sent just before it.
			reply["from_step"] = s.stepBefore(c, lease.Sent)
		}
		if s.promises.Fencing && lease.Fence > 0 {
			reply["fence"] = lease.Fence
		}
		if s.promises.Validity && lease.Validity > 0 {
			reply["validity_ms"] = lease.Validity.Milliseconds()
		}
		if lease.TTL > 0 && lease.TTL != s.ttl {
			reply["ttl_ms"] = lease.TTL.Milliseconds()
		}
		s.mu.Lock()
		s.leases[lease.Token] = lease
		s.mu.Unlock()
	case errors.As(err, &ref):
		reply["outcome"], reply["reason"] = outRefused, ref.Reason
		reply["held_from_step"], reply["last_write_step"] = s.stepBefore(c, ref.HeldFrom), s.stepBefore(c, ref.HeldTo)
		reply["cleaned"] = true
	case errors.Is(err, locks.ErrNotAcquired):
		reply["outcome"] = outNotAcquired
	default:
		reply["outcome"], reply["error"] = outUnknown, err.Error()
	}
}
