package docker

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"

	dc "github.com/ory/dockertest/v3/docker"
)

// File is one entry of an image: a copy of Src, made content (Body) or a
// symbolic link (Link), at Dst.
type File struct {
	Src, Dst string
	// Link, when set, makes Dst a symbolic link to it: names such as
	// python3 -> python3.11 stay links, as on the machine they come from.
	Link string
	// Body, when not nil, is Dst's content, made rather than copied
	// (the image's /etc/passwd).
	Body []byte
	// Mode is Dst's permission bits; 0 means 0755.
	Mode os.FileMode
}

// dir is a directory made in the image, with its mode (/tmp's sticky bit).
type dir struct {
	name string
	mode os.FileMode
}

// layout is a build context: the Dockerfile, and under rootfs/ the
// directories and files the Dockerfile copies onto the empty base.
type layout struct {
	dockerfile []byte
	dirs       []dir
	files      []File
}

// body returns f's content: Body, or Src's.
func (f File) body() ([]byte, error) {
	if f.Body != nil {
		return f.Body, nil
	}
	b, err := os.ReadFile(f.Src)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Src, err)
	}
	return b, nil
}

// hash is the hex SHA-256 of the Dockerfile and every file: its path, and
// its content or link target, so that a changed binary or library gives a
// new image and an unchanged one reuses the old. Modes count only where
// set, which keeps the Redis image's tag what it was before they could be.
func (l layout) hash() (string, error) {
	h := sha256.New()
	h.Write(l.dockerfile)
	for _, f := range l.files {
		if f.Link != "" {
			fmt.Fprintf(h, "\x00%s\x00->%s\x00", f.Dst, f.Link)
			continue
		}
		body, err := f.body()
		if err != nil {
			return "", err
		}
		if f.Mode != 0 {
			fmt.Fprintf(h, "\x00mode %o", f.Mode)
		}
		fmt.Fprintf(h, "\x00%s\x00%d\x00", f.Dst, len(body))
		h.Write(body)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// write writes the build context to w as a tar.
func (l layout) write(w io.Writer) error {
	tw := tar.NewWriter(w)
	add := func(name string, mode os.FileMode, body []byte) error {
		hdr := &tar.Header{Name: name, Mode: int64(mode), Size: int64(len(body)), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	if err := add("Dockerfile", 0o644, l.dockerfile); err != nil {
		return err
	}
	dirs := append([]dir{{"", 0o755}}, l.dirs...)
	for _, d := range dirs {
		hdr := &tar.Header{Name: "rootfs" + d.name + "/", Mode: int64(d.mode), Typeflag: tar.TypeDir}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
	}
	for _, f := range l.files {
		if f.Link != "" {
			hdr := &tar.Header{Name: "rootfs" + f.Dst, Linkname: f.Link, Mode: 0o777, Typeflag: tar.TypeSymlink}
			if err := tw.WriteHeader(hdr); err != nil {
				return fmt.Errorf("pack %s: %w", f.Dst, err)
			}
			continue
		}
		body, err := f.body()
		if err != nil {
			return err
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o755
		}
		if err := add("rootfs"+f.Dst, mode, body); err != nil {
			return fmt.Errorf("pack %s: %w", f.Dst, err)
		}
	}
	return tw.Close()
}

// build builds l as image tag through the engine's /build endpoint. The
// context streams from the files as the engine reads it: the harness's
// image is some hundred megabytes, which need not sit in memory at once.
func build(ctx context.Context, client *dc.Client, tag string, labels map[string]string, l layout) error {
	pr, pw := io.Pipe()
	wrote := make(chan error, 1)
	go func() {
		err := l.write(pw)
		pw.CloseWithError(err)
		wrote <- err
	}()
	var log bytes.Buffer
	err := client.BuildImage(dc.BuildImageOptions{
		Name: tag, InputStream: pr, OutputStream: &log,
		RmTmpContainer: true, ForceRmTmpContainer: true, Labels: labels,
		Context: ctx,
	})
	// A build that stopped early leaves the writer blocked on the pipe.
	pr.Close()
	if werr := <-wrote; werr != nil && !errors.Is(werr, io.ErrClosedPipe) {
		return fmt.Errorf("build image %s: make its build context: %w", tag, werr)
	}
	if err != nil {
		return fmt.Errorf("build image %s: %w%s", tag, err, lastLine(&log))
	}
	return nil
}

// libs lists the shared libraries obj loads, at the paths ldd names. A
// statically linked file (a Go binary built with CGO off) has none, and
// ldd refuses it, so it is not asked.
func libs(ctx context.Context, obj string) ([]string, error) {
	f, err := elf.Open(obj)
	if err != nil {
		return nil, fmt.Errorf("read %s as an ELF file: %w", obj, err)
	}
	dynamic := false
	for _, p := range f.Progs {
		dynamic = dynamic || p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC
	}
	f.Close()
	if !dynamic {
		return nil, nil
	}
	out, err := exec.CommandContext(ctx, "ldd", obj).Output()
	if err != nil {
		if strings.Contains(string(out), "statically linked") {
			return nil, nil
		}
		return nil, fmt.Errorf("ldd %s (is it a dynamically linked ELF file?): %w", obj, err)
	}
	l, err := parseLdd(out)
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", obj, err)
	}
	return l, nil
}

// parseLdd reads the library paths of ldd's output: "name => /path (addr)"
// and the loader's "/lib64/ld-linux-x86-64.so.2 (addr)"; the vDSO has no
// file. A library ldd cannot find is an error.
func parseLdd(out []byte) ([]string, error) {
	var libs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.Contains(line, "not found") {
			return nil, fmt.Errorf("missing library: %s", line)
		}
		if _, after, ok := strings.Cut(line, "=>"); ok {
			line = strings.TrimSpace(after)
		}
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], "/") {
			libs = append(libs, f[0])
		}
	}
	sort.Strings(libs)
	return libs, nil
}

func lastLine(r io.Reader) string {
	b, _ := io.ReadAll(r)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) == 0 || lines[len(lines)-1] == "" {
		return ""
	}
	return " (" + lines[len(lines)-1] + ")"
}
