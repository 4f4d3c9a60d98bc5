// Package docker builds images locally from what is installed on this
// machine (binaries and the libraries they link, on an empty base image), so
// that no image is ever pulled: the machines this runs on, like many behind
// a firewall, cannot reach a registry. It builds two: the Docker backend's
// Redis image (this file) and the harness's own image, which `torture
// image` builds for a cluster to run torture in (torture.go).
package docker

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

//go:embed Dockerfile
var dockerfile []byte

// Repository is the image's name; its tag is the content hash.
const Repository = "locktorture-redis"

// LabelImage marks the images this package built.
const LabelImage = "locktorture.image"

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
		libs, err := libs(ctx, obj)
		if err != nil {
			return nil, err
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

// redisLayout is the Redis image's build context for files.
func redisLayout(files []File) layout {
	return layout{dockerfile: dockerfile, dirs: []dir{{"/data", 0o755}, {"/tmp", 0o755}}, files: files}
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
	l := redisLayout(files)
	sum, err := l.hash()
	if err != nil {
		return "", fmt.Errorf("make the image's build context: %w", err)
	}
	tag := Repository + ":" + sum[:16]
	if _, err := client.InspectImage(tag); err == nil {
		return tag, nil
	} else if !errors.Is(err, dc.ErrNoSuchImage) {
		return "", fmt.Errorf("look for image %s: %w", tag, err)
	}
	if err := build(ctx, client, tag, map[string]string{LabelImage: "redis"}, l); err != nil {
		return "", err
	}
	return tag, nil
}

// Connect returns a client of the Docker engine at endpoint (default:
// $DOCKER_HOST, else the local socket), once the engine answers a ping, and
// the endpoint it reached: an engine that is not there is said at once
// rather than by the first call that needs it.
func Connect(ctx context.Context, endpoint string) (*dc.Client, string, error) {
	pool, err := dockertest.NewPool(endpoint)
	if err != nil {
		return nil, "", err
	}
	ep := pool.Client.Endpoint()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Client.PingWithContext(pctx); err != nil {
		return nil, "", fmt.Errorf("no Docker engine answers at %s (is it installed and running? set DOCKER_HOST): %s",
			ep, strings.Join(strings.Fields(err.Error()), " "))
	}
	return pool.Client, ep, nil
}
