package program

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/locktorture/locktorture/locks"
)

// ExecPrefix starts a lock named by its command line: exec:COMMAND ARGS...
const ExecPrefix = "exec:"

// IsExec reports whether a lock name is a command line (exec:...).
func IsExec(name string) bool { return strings.HasPrefix(name, ExecPrefix) }

// Exec is the lock named exec:COMMAND ARGS..., split into words as a shell
// would (quotes, backslashes, $VARS from the environment; no globs or
// command substitution), leading NAME=value words set in the program's
// environment. The command is not looked for until a run starts it: a
// missing one fails that run with one line.
func Exec(name string) (locks.Entry, error) {
	c, err := parseExec(name)
	if err != nil {
		return locks.Entry{}, err
	}
	return Entry(name, "lock program "+c.Show, func() (Command, error) { return c, nil }), nil
}

// parseExec splits an exec: line into the program's environment and argv.
// Leading NAME=value words are assignments, as a shell takes them: each is
// set in the program's environment (its value expanded but not split), and
// the first other word is the command. Every word is expanded against the
// harness's own environment, so A=1 cmd $A passes the outer A, as sh does.
func parseExec(name string) (Command, error) {
	line := strings.TrimSpace(strings.TrimPrefix(name, ExecPrefix))
	var words []*syntax.Word
	for w, err := range syntax.NewParser().WordsSeq(strings.NewReader(line)) {
		if err != nil {
			return Command{}, fmt.Errorf("lock %q: cannot split the command line: %v", name, err)
		}
		words = append(words, w)
	}
	cfg := &expand.Config{Env: expand.FuncEnviron(os.Getenv)}
	var env []string
	for len(words) > 0 {
		assign, ok := assignment(words[0])
		if !ok {
			break
		}
		v, err := expand.Literal(cfg, assign.value)
		if err != nil {
			return Command{}, fmt.Errorf("lock %q: cannot expand %s=: %v", name, assign.name, err)
		}
		env, words = append(env, assign.name+"="+v), words[1:]
	}
	argv, err := expand.Fields(cfg, words...)
	if err != nil {
		return Command{}, fmt.Errorf("lock %q: cannot split the command line: %v", name, err)
	}
	switch {
	case len(argv) == 0 && len(env) > 0:
		return Command{}, fmt.Errorf("lock %q: no command after the NAME=value assignments", name)
	case len(argv) == 0:
		return Command{}, fmt.Errorf("lock %q: no command after %s", name, ExecPrefix)
	}
	return Command{Argv: argv, Env: env, Show: line}, nil
}

// assign is a NAME=value word: the name, and the value as a word of its own.
type assign struct {
	name  string
	value *syntax.Word
}

// assignment reads w as NAME=value when it is one to a shell: it starts
// with an unquoted name (a letter or '_', then letters, digits, '_') and '='.
func assignment(w *syntax.Word) (assign, bool) {
	if len(w.Parts) == 0 {
		return assign{}, false
	}
	lit, ok := w.Parts[0].(*syntax.Lit)
	if !ok {
		return assign{}, false
	}
	n, rest, ok := strings.Cut(lit.Value, "=")
	if !ok || !isName(n) {
		return assign{}, false
	}
	parts := append([]syntax.WordPart{&syntax.Lit{Value: rest}}, w.Parts[1:]...)
	return assign{name: n, value: &syntax.Word{Parts: parts}}, true
}

func isName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// Entry registers a lock program under name: each client incarnation runs
// the command cmd returns (called once per process: it may find an
// interpreter, say, and fail with a one-line error when there is none).
func Entry(name, summary string, cmd func() (Command, error)) locks.Entry {
	build := func(cfg locks.Config) (*Lock, error) {
		c, err := cmd()
		if err != nil {
			return nil, &locks.FatalError{Err: err}
		}
		return New(c, cfg)
	}
	return locks.Entry{Name: name, Summary: summary,
		New: func(cfg locks.Config) (locks.Lock, error) { return build(cfg) },
		Probe: func(_ context.Context, cfg locks.Config) (string, error) {
			if cfg.NewToken == nil {
				cfg.NewToken = func() string { return "probe" }
			}
			l, err := build(cfg)
			if err != nil {
				var f *locks.FatalError
				if errors.As(err, &f) {
					return "", f.Err
				}
				return "", err
			}
			defer l.Close()
			return l.Name(), nil
		}}
}

// Entries are the in-tree lock programs: the reference client, redis-py,
// django-redis and node-redis.
func Entries() []locks.Entry {
	py, js := pythonFinder(), nodeFinder()
	return []locks.Entry{
		Entry("exec-token", "the built-in token lock run out of process over the lock protocol: the protocol's reference client, same verdicts as token", reference("token")),
		Entry("redis-py", "redis-py's redis.lock.Lock (Python, SET NX PX, Lua release): like token, long work or a SIGSTOP gives two holders", py.command("redis_py.py", redisPy, "")),
		Entry("redis-py-extend", "redis-py's Lock + a thread calling extend every ttl/3 while held: survives long work, not a SIGSTOP", py.command("redis_py.py", redisPy, "--extend")),
		Entry("redis-py-shared-token", "redis-py's Lock made once per key and shared by a process's threads with thread_local=False (--share): one thread's release uses another's token and deletes its lock", py.command("redis_py.py", redisPy, "--shared-token")),
		Entry("django-redis", "django-redis's cache.lock (Python): redis-py's Lock on the key Django's key function makes (:1:<name>), a lock that names its own key; like token, long work or a SIGSTOP gives two holders", py.command("django_redis.py", djangoRedisPy, "")),
		serving(Entry("node-redis", "node-redis's SET NX PX with a token and a Lua compare-and-delete (Node): like token, long work or a SIGSTOP gives two holders; no foreign release", js.command()),
			// node-redis 4.5.1 has no Sentinel client, and the program
			// dials the first master only (node_redis.js says the same in
			// its hello).
			"single", "redlock"),
	}
}

// serving is e declaring the topologies it serves.
func serving(e locks.Entry, topologies ...string) locks.Entry {
	e.Topologies = topologies
	return e
}

// Register adds the in-tree lock programs to r.
func Register(r *locks.Registry) error {
	for _, e := range Entries() {
		if err := r.Register(e); err != nil {
			return fmt.Errorf("register lock programs: %w", err)
		}
	}
	return nil
}

// reference runs the built-in lock name out of process: this very binary,
// started with ServeEnv (see init).
func reference(name string) func() (Command, error) {
	return func() (Command, error) {
		exe, err := os.Executable()
		if err != nil {
			return Command{}, fmt.Errorf("exec-%s: find this executable: %w", name, err)
		}
		return Command{Argv: []string{exe}, Env: []string{ServeEnv + "=" + name, "GOMAXPROCS=1"}, Show: "exec-" + name}, nil
	}
}
