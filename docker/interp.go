package docker

import (
	"context"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
)

// The interpreters the in-tree lock programs look for first (see
// locks/program): Debian's, which load Debian's python3-redis and
// node-redis.
const (
	python = "/usr/bin/python3"
	node   = "/usr/bin/node"
)

// addPython copies python3, its standard library without what no lock
// program imports (the test suites, Tk, IDLE, 2to3, ...), and the modules
// of python3-redis and the packages it needs, from Debian's dist-packages.
func (s *fileSet) addPython(ctx context.Context) error {
	if err := s.addPath(ctx, python); err != nil {
		return fmt.Errorf("%w (install python3 and python3-redis: scripts/install-deps.sh)", err)
	}
	out, err := exec.CommandContext(ctx, python, "-c",
		`import sysconfig; print(sysconfig.get_path("stdlib")); print(sysconfig.get_path("platstdlib"))`).Output()
	if err != nil {
		return fmt.Errorf("ask %s where its standard library is: %w", python, err)
	}
	done := map[string]bool{}
	for _, lib := range strings.Fields(string(out)) {
		if !done[lib] {
			done[lib] = true
			if err := s.addTree(ctx, lib, skipStdlib); err != nil {
				return err
			}
		}
	}
	return s.addModules(ctx, "python3-redis", "python3-", func(p string) bool {
		return strings.HasPrefix(p, "/usr/lib/python3/dist-packages/")
	})
}

// skipStdlib leaves out of Python's standard library what a lock program
// never imports: a third of its size, and the Tk module's X libraries.
func skipStdlib(p string, d fs.DirEntry) bool {
	base := d.Name()
	if d.IsDir() {
		switch base {
		case "test", "tests", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data":
			return true
		}
		return strings.HasPrefix(base, "config-") // the static library and Makefile to embed Python
	}
	if filepath.Base(filepath.Dir(p)) == "lib-dynload" {
		for _, prefix := range []string{"_test", "xx", "_ctypes_test", "_tkinter"} {
			if strings.HasPrefix(base, prefix) {
				return true
			}
		}
	}
	return false
}

// addNode copies node and the modules of node-redis and the packages it
// needs, from the folders the harness names in NODE_PATH.
func (s *fileSet) addNode(ctx context.Context) error {
	if err := s.addPath(ctx, node); err != nil {
		return fmt.Errorf("%w (install nodejs and node-redis: scripts/install-deps.sh)", err)
	}
	return s.addModules(ctx, "node-redis", "node-", isNodeModule)
}

// isNodeModule reports whether p is in one of Debian's Node module folders:
// /usr/share/nodejs, /usr/lib/nodejs, /usr/lib/<triplet>/nodejs.
func isNodeModule(p string) bool {
	if strings.HasPrefix(p, "/usr/share/nodejs/") || strings.HasPrefix(p, "/usr/lib/nodejs/") {
		return true
	}
	parts := strings.SplitN(strings.TrimPrefix(p, "/usr/lib/"), "/", 3)
	return strings.HasPrefix(p, "/usr/lib/") && len(parts) == 3 && parts[1] == "nodejs"
}

// addModules copies the files of Debian package root and of the packages
// it needs whose names start with prefix, those keep accepts; a C module
// brings its libraries.
func (s *fileSet) addModules(ctx context.Context, root, prefix string, keep func(string) bool) error {
	pkgs, err := debClosure(ctx, root, prefix)
	if err != nil {
		return err
	}
	return s.addDebFiles(ctx, pkgs, keep)
}

// addDebFiles adds the files of Debian packages pkgs that keep accepts,
// each with the libraries it links.
func (s *fileSet) addDebFiles(ctx context.Context, pkgs []string, keep func(string) bool) error {
	files, err := debFiles(ctx, pkgs, keep)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := s.addELF(ctx, f, f); err != nil {
			return err
		}
	}
	return nil
}
