package program

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// The Node lock program travels inside the binary, as the Python ones do:
// `node -e` runs it from no checkout and with nothing written to disk.
var (
	//go:embed node/lockproto.js
	lockprotoJS string
	//go:embed node/node_redis.js
	nodeRedisJS string
)

// NodeEnv names a Node interpreter to use for the in-tree Node lock before
// the ones looked for by default.
const NodeEnv = "LOCKTORTURE_NODE"

// debianNodeDirs are where Debian's node-* packages put their modules.
// Debian's own nodejs searches them by default, but a node from elsewhere
// (NodeSource's, nvm's) does not, so the harness names them in NODE_PATH
// rather than asking every user to.
func debianNodeDirs() []string {
	dirs, _ := filepath.Glob("/usr/lib/*/nodejs") // /usr/lib/<triplet>/nodejs
	return append(dirs, "/usr/share/nodejs", "/usr/lib/nodejs")
}

// nodePath is the NODE_PATH entry a Node lock program runs with: the
// user's own NODE_PATH first, then Debian's module folders.
func nodePath() string {
	dirs := debianNodeDirs()
	if own := os.Getenv("NODE_PATH"); own != "" {
		dirs = append([]string{own}, dirs...)
	}
	return "NODE_PATH=" + strings.Join(dirs, string(os.PathListSeparator))
}

// node finds, once per registry entry set, an interpreter that can require
// redis: Debian's /usr/bin/node first, then node on PATH.
type node struct {
	once sync.Once
	path string
	env  string // NODE_PATH=...
	err  error
}

func nodeFinder() *node { return &node{} }

func (n *node) find() (string, string, error) {
	n.once.Do(func() {
		n.env = nodePath()
		var tried []string
		n.path, tried = firstWorking([]string{os.Getenv(NodeEnv), "/usr/bin/node", "node"},
			func(ctx context.Context, bin string) *exec.Cmd {
				return withEnv(exec.CommandContext(ctx, bin, "-e", "require('redis')"), n.env)
			})
		if n.path != "" {
			return
		}
		n.err = fmt.Errorf("no Node interpreter here can require redis (tried %s, with Debian's module folders on NODE_PATH): install Debian's node-redis (scripts/install-deps.sh) or set %s",
			strings.Join(tried, ", "), NodeEnv)
	})
	return n.path, n.env, n.err
}

// command runs node_redis.js after lockproto.js, as one `node -e` source.
func (n *node) command() func() (Command, error) {
	return func() (Command, error) {
		bin, env, err := n.find()
		if err != nil {
			return Command{}, err
		}
		return Command{Argv: []string{bin, "-e", lockprotoJS + "\n" + nodeRedisJS}, Env: []string{env},
			Show: bin + " node_redis.js"}, nil
	}
}

// FindNode returns the interpreter the node-redis program would run, or the
// one-line error saying none can require redis.
func FindNode() (string, error) {
	bin, _, err := nodeFinder().find()
	return bin, err
}
