package docker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// fileSet gathers an image's files, each destination once: the C library
// every binary links is named by each of them.
type fileSet struct {
	files []File
	seen  map[string]bool
}

func newFileSet() *fileSet { return &fileSet{seen: map[string]bool{}} }

func (s *fileSet) add(f File) {
	if !s.seen[f.Dst] {
		s.seen[f.Dst] = true
		s.files = append(s.files, f)
	}
}

// addELF copies src (a symbolic link is copied as its target's content) to
// dst with its mode and, when it is an ELF file, every library ldd names
// for it at the path ldd names, as the Redis image does.
func (s *fileSet) addELF(ctx context.Context, src, dst string) error {
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("look at %s: %w", src, err)
	}
	s.add(File{Src: src, Dst: dst, Mode: st.Mode().Perm()})
	if !isELF(src) {
		return nil
	}
	ls, err := libs(ctx, src)
	if err != nil {
		return err
	}
	for _, l := range ls {
		s.add(File{Src: l, Dst: l})
	}
	return nil
}

// addPath adds p at its own path: each symbolic link on the way to the file
// it names (/usr/bin/python3 -> python3.11, /bin/sh -> dash) as a link, the
// file itself with its libraries.
func (s *fileSet) addPath(ctx context.Context, p string) error {
	for hops := 0; hops < 16; hops++ {
		st, err := os.Lstat(p)
		if err != nil {
			return fmt.Errorf("look at %s: %w", p, err)
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			return s.addELF(ctx, p, p)
		}
		target, err := os.Readlink(p)
		if err != nil {
			return fmt.Errorf("read link %s: %w", p, err)
		}
		s.add(File{Dst: p, Link: target})
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = target
	}
	return fmt.Errorf("%s: too many symbolic links", p)
}

// addTree adds the files under root at their paths, but for those skip
// says to leave out. A symbolic link becomes a copy of what it names
// (Debian's sitecustomize.py points into /etc), and a shared object brings
// its libraries (the C modules of Python's standard library link OpenSSL,
// libffi, ...).
func (s *fileSet) addTree(ctx context.Context, root string, skip func(path string, d fs.DirEntry) bool) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("walk %s: %w", root, err)
		}
		if skip != nil && skip(p, d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("look at %s: %w", p, err)
		}
		if st.IsDir() {
			// A link to a folder: its files, at the link's path (the
			// trailing separator makes the walk follow it).
			return s.addTree(ctx, p+string(filepath.Separator), skip)
		}
		if !st.Mode().IsRegular() {
			return nil
		}
		return s.addELF(ctx, p, p)
	})
}

// isELF reports whether p starts as an ELF file does.
func isELF(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 4)
	_, err = f.Read(magic)
	return err == nil && bytes.Equal(magic, []byte("\x7fELF"))
}

// debClosure returns root and the installed packages it needs, following
// Depends only through names that start with prefix (python3-, node-): the
// module packages an interpreter loads. The interpreter and the C libraries
// under them are not followed: ldd finds the libraries that matter. Of an
// alternative (a | b) the first installed one is taken.
func debClosure(ctx context.Context, root, prefix string) ([]string, error) {
	ok, _, err := debPackage(ctx, root)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("Debian package %s is not installed (scripts/install-deps.sh installs it)", root)
	}
	seen := map[string]bool{root: true}
	order := []string{root}
	for i := 0; i < len(order); i++ {
		_, deps, err := debPackage(ctx, order[i])
		if err != nil {
			return nil, err
		}
		for _, alts := range deps {
			for _, name := range alts {
				if !strings.HasPrefix(name, prefix) {
					break
				}
				ok, _, err := debPackage(ctx, name)
				if err != nil {
					return nil, err
				}
				if ok {
					if !seen[name] {
						seen[name] = true
						order = append(order, name)
					}
					break
				}
			}
		}
	}
	return order, nil
}

// debPackage reports whether Debian package name is installed and, if so,
// its Depends: each a list of alternatives, without versions or
// architecture qualifiers.
func debPackage(ctx context.Context, name string) (installed bool, deps [][]string, err error) {
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f", "${db:Status-Abbrev}|${Depends}", name).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return false, nil, nil // dpkg knows no such package
		}
		return false, nil, fmt.Errorf("dpkg-query %s (is this a Debian system?): %w", name, err)
	}
	status, depends, _ := strings.Cut(string(out), "|")
	if !strings.HasPrefix(status, "ii") {
		return false, nil, nil
	}
	for _, dep := range strings.Split(depends, ",") {
		var alts []string
		for _, a := range strings.Split(dep, "|") {
			a, _, _ = strings.Cut(strings.TrimSpace(a), " ")
			a, _, _ = strings.Cut(a, ":")
			if a != "" {
				alts = append(alts, a)
			}
		}
		if len(alts) > 0 {
			deps = append(deps, alts)
		}
	}
	return true, deps, nil
}

// debFiles lists the files (not folders) Debian packages pkgs installed
// for which keep is true.
func debFiles(ctx context.Context, pkgs []string, keep func(path string) bool) ([]string, error) {
	out, err := exec.CommandContext(ctx, "dpkg", append([]string{"-L"}, pkgs...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg -L %s: %w", strings.Join(pkgs, " "), err)
	}
	var files []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		p := sc.Text()
		if !keep(p) {
			continue
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			files = append(files, p)
		}
	}
	return files, nil
}
