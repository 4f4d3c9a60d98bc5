// Package docker builds the Docker backend's Redis image locally from the
// redis-server already installed (its binary and the libraries it links, on
// an empty base image), so that no image is ever pulled: the machines this
// runs on, like many behind a firewall, cannot reach a registry.
package docker

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	dc "github.com/ory/dockertest/v3/docker"
)

//go:embed Dockerfile
var dockerfile []byte

// Repository is the image's name; its tag is the content hash.
const Repository = "locktorture-redis"

// LabelImage marks the images this package built.
const LabelImage = "locktorture.image"

// File is one file of the image: Src on this machine, Dst in the image.
type File struct {
	Src, Dst string
}

// Files lists what the image holds for the redis-server binary bin: the
// binary itself as /usr/bin/redis-server (Sentinel is the same binary with
// --sentinel) and every shared library ldd names, at the same path; and
// each extra library (libfaketime, preloaded by the clock faults) with the
// libraries it needs, at their paths.
func Files(ctx context.Context, bin string, extra ...string) ([]File, error) {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", bin, err)
	}
	files := []File{{Src: real, Dst: "/usr/bin/redis-server"}}
	seen := map[string]bool{}
	for i, obj := range append([]string{real}, extra...) {
		out, err := exec.CommandContext(ctx, "ldd", obj).Output()
		if err != nil {
			return nil, fmt.Errorf("ldd %s (is it a dynamically linked ELF file?): %w", obj, err)
		}
		libs, err := parseLdd(out)
		if err != nil {
			return nil, fmt.Errorf("ldd %s: %w", obj, err)
		}
		if i > 0 {
			libs = append([]string{obj}, libs...)
		}
		for _, l := range libs {
			if !seen[l] {
				seen[l] = true
				files = append(files, File{Src: l, Dst: l})
			}
		}
	}
	return files, nil
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

// Context returns the build context (Dockerfile and rootfs/) as a tar, and
// the image tag: the hash of everything in it, so that a changed binary or
// library gives a new image and an unchanged one reuses the old.
func Context(files []File) ([]byte, string, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	h := sha256.New()
	h.Write(dockerfile)
	add := func(name string, mode int64, body []byte) error {
		hdr := &tar.Header{Name: name, Mode: mode, Size: int64(len(body)), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Name: name + "/", Mode: 0o755, Typeflag: tar.TypeDir})
	}
	if err := add("Dockerfile", 0o644, dockerfile); err != nil {
		return nil, "", err
	}
	for _, d := range []string{"rootfs", "rootfs/data", "rootfs/tmp"} {
		if err := dir(d); err != nil {
			return nil, "", err
		}
	}
	for _, f := range files {
		body, err := os.ReadFile(f.Src)
		if err != nil {
			return nil, "", fmt.Errorf("read %s: %w", f.Src, err)
		}
		fmt.Fprintf(h, "\x00%s\x00%d\x00", f.Dst, len(body))
		h.Write(body)
		if err := add("rootfs"+f.Dst, 0o755, body); err != nil {
			return nil, "", fmt.Errorf("pack %s: %w", f.Dst, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), Repository + ":" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Ensure returns the tag of the Redis image for redis-server bin (and the
// extra libraries, see Files), building it through the Docker API (the
// engine's /build endpoint, via dockertest's client) only when no image of
// that content exists yet.
func Ensure(ctx context.Context, client *dc.Client, bin string, extra ...string) (string, error) {
	files, err := Files(ctx, bin, extra...)
	if err != nil {
		return "", err
	}
	tarball, tag, err := Context(files)
	if err != nil {
		return "", fmt.Errorf("make the image's build context: %w", err)
	}
	if _, err := client.InspectImage(tag); err == nil {
		return tag, nil
	} else if !errors.Is(err, dc.ErrNoSuchImage) {
		return "", fmt.Errorf("look for image %s: %w", tag, err)
	}
	var log bytes.Buffer
	err = client.BuildImage(dc.BuildImageOptions{
		Name: tag, InputStream: bytes.NewReader(tarball), OutputStream: &log,
		RmTmpContainer: true, ForceRmTmpContainer: true, Labels: map[string]string{LabelImage: "redis"},
		Context: ctx,
	})
	if err != nil {
		return "", fmt.Errorf("build image %s: %w%s", tag, err, lastLine(&log))
	}
	return tag, nil
}

func lastLine(r io.Reader) string {
	b, _ := io.ReadAll(r)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) == 0 || lines[len(lines)-1] == "" {
		return ""
	}
	return " (" + lines[len(lines)-1] + ")"
}
