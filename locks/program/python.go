package program

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// The Python lock programs travel inside the binary: an installed torture
// runs them with `python3 -c`, from no checkout and with nothing written to
// disk.
var (
	//go:embed python/lockproto.py
	lockprotoPy string
	//go:embed python/routes.py
	routesPy string
	//go:embed python/redis_py.py
	redisPy string
	//go:embed python/django_redis.py
	djangoRedisPy string
)

// PythonEnv names a Python interpreter to use for the in-tree Python locks
// before the ones looked for by default.
const PythonEnv = "LOCKTORTURE_PYTHON"

// python finds, once per registry entry set, an interpreter that can import
// redis: Debian's /usr/bin/python3 first, since a python3 earlier on PATH
// (pyenv's, a virtualenv's) often does not see Debian's python3-redis.
type python struct {
	once sync.Once
	path string
	err  error
}

func pythonFinder() *python { return &python{} }

func (p *python) find() (string, error) {
	p.once.Do(func() {
		var tried []string
		p.path, tried = firstWorking([]string{os.Getenv(PythonEnv), "/usr/bin/python3", "python3"},
			func(ctx context.Context, bin string) *exec.Cmd {
				return exec.CommandContext(ctx, bin, "-c", "import redis")
			})
		if p.path != "" {
			return
		}
		p.err = fmt.Errorf("no Python interpreter here can import redis (tried %s): install Debian's python3-redis (scripts/install-deps.sh) or set %s",
			strings.Join(tried, ", "), PythonEnv)
	})
	return p.path, p.err
}

// command runs the program source, named file (redis_py.py with flag
// none, --extend: its renewing variant, --shared-token: its shared Lock
// without thread-local tokens; django_redis.py), after the protocol
// (lockproto.py) and the address mapping (routes.py) it builds on.
func (p *python) command(file, source, flag string) func() (Command, error) {
	return func() (Command, error) {
		py, err := p.find()
		if err != nil {
			return Command{}, err
		}
		argv := []string{py, "-c", lockprotoPy + "\n" + routesPy + "\n" + source}
		show := py + " " + file
		if flag != "" {
			argv = append(argv, flag)
			show += " " + flag
		}
		return Command{Argv: argv, Show: show}, nil
	}
}

// FindPython returns the interpreter the redis-py programs would run, or
// the one-line error saying none can import redis.
func FindPython() (string, error) { return pythonFinder().find() }
