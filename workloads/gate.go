package workloads

import (
	"context"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/locktorture/locktorture/locks"
)

// ErrCrashed is returned from every step of a process the nemesis killed
// (locks.ErrCrashed: a lock that runs its own process says it too).
var ErrCrashed = locks.ErrCrashed

// Gate is one client process's world, which a nemesis can stop or end. The
// process's loop, its lock's background goroutines (the watchdog) and its
// Redis connections all pass through the gate, so a pause stops all of them
// at once, as a stop-the-world GC pause or SIGSTOP would, including between
// sending a command and reading its reply.
type Gate struct {
	mu      sync.Mutex
	resume  chan struct{} // non-nil while paused; closed on resume
	pausedT time.Time
	dead    chan struct{}
	crashIn int    // steps left before a scheduled crash; -1 when none
	crashAt string // the protocol point where a scheduled crash lands
	points  map[string]bool
	// observe, when set, is told of each point before the step takes
	// effect, so a crash or pause aimed at the point lands on it.
	// ctx is the step's: a gate shared by several clients (--share)
	// tells from it which of them stands at the point.
	observe func(ctx context.Context, point string)
	// proc, when set, is the operating-system process the client's lock
	// runs in: pauses and crashes reach it as signals.
	proc Signaled
}

// Signaled is implemented by a lock that runs as an operating-system
// process of its own (a lock program, see locks/program). Its threads do not
// pass through the gate, so the gate stops, continues and kills the process
// itself: a pause is SIGSTOP of all its threads, a crash SIGKILL. Each call
// must return at once.
type Signaled interface {
	Stop()
	Continue()
	Kill()
}

// Attach makes the gate's pauses and crashes reach p too. A process that
// crashed already is killed at once.
func (g *Gate) Attach(p Signaled) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.proc = p
	select {
	case <-g.dead:
		p.Kill()
		return
	default:
	}
	if g.resume != nil {
		p.Stop()
	}
}

// NewGate returns a gate for a running process.
func NewGate() *Gate { return &Gate{dead: make(chan struct{}), crashIn: -1, points: map[string]bool{}} }

// Points lists, sorted, the protocol points the process has passed so far
// (attempt, between-setnx-and-pexpire, read, write, release, watchdog...).
func (g *Gate) Points() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Sorted(maps.Keys(g.points))
}

// CrashAt kills the process the next time it reaches the named point, so a
// crash can be aimed at each step of the protocol with equal chance, however
// rarely the process passes it (between SETNX and PEXPIRE, say).
func (g *Gate) CrashAt(point string) {
	g.mu.Lock()
	g.crashAt = point
	g.mu.Unlock()
}

// Pause stops the process at its next step, read or write.
func (g *Gate) Pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.resume == nil {
		g.resume = make(chan struct{})
		g.pausedT = time.Now()
		if g.proc != nil {
			g.proc.Stop()
		}
	}
}

// Resume lets a paused process go on.
func (g *Gate) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.resume != nil {
		close(g.resume)
		g.resume = nil
		if g.proc != nil {
			g.proc.Continue()
		}
	}
}

// Paused reports whether the process is stopped.
func (g *Gate) Paused() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.resume != nil
}

// Crash kills the process now: every step and connection fails from here on.
func (g *Gate) Crash() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.dead:
	default:
		close(g.dead)
		if g.proc != nil {
			g.proc.Kill()
		}
	}
	if g.resume != nil {
		close(g.resume)
		g.resume = nil
	}
}

// CrashAfter kills the process when it reaches its n-th next protocol step,
// so a crash can land anywhere in the lock protocol (between SETNX and
// PEXPIRE included).
func (g *Gate) CrashAfter(n int) {
	if n <= 0 {
		g.Crash()
		return
	}
	g.mu.Lock()
	g.crashIn = n
	g.mu.Unlock()
}

// Dead is closed once the process has crashed.
func (g *Gate) Dead() <-chan struct{} { return g.dead }

// wait blocks while the gate is paused and returns how long it waited.
func (g *Gate) wait(ctx context.Context) (time.Duration, error) {
	g.mu.Lock()
	resume, since := g.resume, g.pausedT
	g.mu.Unlock()
	if resume == nil {
		select {
		case <-g.dead:
			return 0, ErrCrashed
		default:
			return 0, nil
		}
	}
	select {
	case <-resume:
	case <-g.dead:
		return 0, ErrCrashed
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case <-g.dead:
		return 0, ErrCrashed
	default:
	}
	return time.Since(since), nil
}

// Armed reports whether the gate itself will act at a step: a crash is
// set for a point or a count of steps, or the process is paused.
func (g *Gate) Armed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.crashAt != "" || g.crashIn > 0 || g.resume != nil
}

// Step is a point of the protocol where the process can be stopped: it blocks
// while paused and fails once crashed. It fits locks.Hooks.Step. A step
// under locks.Unawaited (its command has gone out already) is only told
// and recorded: a crash or pause cannot land before a command that left.
func (g *Gate) Step(ctx context.Context, point string) error {
	if g.observe != nil {
		g.observe(ctx, point)
	}
	g.mu.Lock()
	g.points[point] = true
	if locks.IsUnawaited(ctx) {
		g.mu.Unlock()
		return nil
	}
	if g.crashAt != "" && g.crashAt == point {
		g.crashAt = ""
		g.mu.Unlock()
		g.Crash()
		return ErrCrashed
	}
	if g.crashIn > 0 {
		g.crashIn--
		if g.crashIn == 0 {
			g.crashIn = -1
			g.mu.Unlock()
			g.Crash()
			return ErrCrashed
		}
	}
	g.mu.Unlock()
	if _, err := g.wait(ctx); err != nil {
		return err
	}
	return ctx.Err()
}

// Sleep waits d as process time: a pause during it stops the process, and it
// goes on only after the pause, as a paused thread would.
func (g *Gate) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-g.dead:
		return ErrCrashed
	case <-ctx.Done():
		return ctx.Err()
	}
	_, err := g.wait(ctx)
	return err
}

// Conn wraps a connection of the process: reads and writes wait while the
// process is paused and fail once it crashed. Deadlines are moved by the
// length of a pause, since the process's own clock did not see it pass.
func (g *Gate) Conn(c net.Conn) net.Conn { return &gatedConn{Conn: c, g: g} }

type gatedConn struct {
	net.Conn
	g *Gate

	mu            sync.Mutex
	read, written time.Time // deadlines as the process set them
}

func (c *gatedConn) before(read bool) error {
	waited, err := c.g.wait(context.Background())
	if err != nil {
		c.Conn.Close()
		return net.ErrClosed
	}
	if waited > 0 {
		c.mu.Lock()
		if read && !c.read.IsZero() {
			c.read = c.read.Add(waited)
			_ = c.Conn.SetReadDeadline(c.read)
		}
		if !read && !c.written.IsZero() {
			c.written = c.written.Add(waited)
			_ = c.Conn.SetWriteDeadline(c.written)
		}
		c.mu.Unlock()
	}
	return nil
}

func (c *gatedConn) Read(b []byte) (int, error) {
	if err := c.before(true); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(b)
	// A reply that arrives while the process is stopped is seen only after.
	if _, gerr := c.g.wait(context.Background()); gerr != nil {
		c.Conn.Close()
		return 0, net.ErrClosed
	}
	return n, err
}

func (c *gatedConn) Write(b []byte) (int, error) {
	if err := c.before(false); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

func (c *gatedConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.read, c.written = t, t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *gatedConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.read = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *gatedConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.written = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}
