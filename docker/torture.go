package docker

import (
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	dc "github.com/ory/dockertest/v3/docker"
)

//go:embed Dockerfile.torture
var tortureDockerfile []byte

// TortureRepository is the name of the harness's image; its tag is the
// revision of the torture binary in it.
const TortureRepository = "locktorture"

// LabelContent holds the hash of an image's files. A revision's tag does
// not pin the content (a dirty tree's binary changes under the same
// "-dirty" tag, the interpreters are this machine's), so the harness's
// image is built again when the label differs.
const LabelContent = "locktorture.content"

// The image's own paths: where the harness's binary goes, and the folders
// a run writes into, open to any user (a pod may run as one).
const (
	tortureBin = "/usr/local/bin/torture"
	workDir    = "/work"
)

// TortureOptions say what goes into the harness's image.
type TortureOptions struct {
	// Binary is the torture binary the image runs: a Linux executable for
	// this machine's architecture. `torture image` puts in itself, so a
	// team's own main, with its locks registered, goes in as it is.
	Binary string
	// RedisServer is the redis-server to copy (default: redis-server on
	// PATH).
	RedisServer string
	// Tag is the image's name (default: TortureTag(Binary)).
	Tag string
}

// Built says what BuildTorture did.
type Built struct {
	Tag   string
	Files int
	Bytes int64 // the image's size, as the engine reports it
	// Reused says an image of this tag and content was there already.
	Reused bool
}

// BuildTorture builds the harness's image (see Dockerfile.torture) through
// the Docker API, unless an image of the same tag and content exists.
func BuildTorture(ctx context.Context, client *dc.Client, opts TortureOptions) (Built, error) {
	tag := opts.Tag
	if tag == "" {
		t, err := TortureTag(opts.Binary)
		if err != nil {
			return Built{}, err
		}
		tag = t
	} else if err := CheckTag(tag); err != nil {
		return Built{}, err
	}
	files, err := TortureFiles(ctx, opts)
	if err != nil {
		return Built{}, err
	}
	l := layout{dockerfile: tortureDockerfile, files: files,
		dirs: []dir{{"/tmp", 0o1777}, {workDir, 0o1777}, {"/root", 0o700}, {"/etc", 0o755}}}
	sum, err := l.hash()
	if err != nil {
		return Built{}, fmt.Errorf("hash the image's files: %w", err)
	}
	b := Built{Tag: tag, Files: len(files)}
	old, err := client.InspectImage(tag)
	switch {
	case err == nil && old.Config != nil && old.Config.Labels[LabelContent] == sum:
		b.Reused, b.Bytes = true, old.Size
		return b, nil
	case err != nil && !errors.Is(err, dc.ErrNoSuchImage):
		return b, fmt.Errorf("look for image %s: %w", tag, err)
	}
	if err := build(ctx, client, tag, map[string]string{LabelImage: "torture", LabelContent: sum}, l); err != nil {
		return b, err
	}
	if img, err := client.InspectImage(tag); err == nil {
		b.Bytes = img.Size
	}
	// The image the tag named before (a "-dirty" tag is built again and
	// again) would stay behind untagged, some hundred megabytes each; one
	// a container still uses stays.
	if old != nil && old.Config != nil && old.Config.Labels[LabelImage] == "torture" {
		_ = client.RemoveImageExtended(old.ID, dc.RemoveImageOptions{Context: ctx})
	}
	return b, nil
}

// TortureFiles lists what the harness's image holds: the torture binary,
// redis-server, /bin/sh, faketime and its preload libraries, python3 with
// its standard library and redis-py, node with node-redis, each binary with
// the libraries it links; and the /etc files a process may look up its
// user in.
func TortureFiles(ctx context.Context, opts TortureOptions) ([]File, error) {
	s := newFileSet()
	steps := []struct {
		what string
		add  func() error
	}{
		{"the torture binary", func() error { return s.addELF(ctx, opts.Binary, tortureBin) }},
		{"redis-server", func() error { return s.addRedis(ctx, opts.RedisServer) }},
		// The Kubernetes Job's command is a shell line.
		{"/bin/sh", func() error { return s.addPath(ctx, "/bin/sh") }},
		{"faketime", func() error { return s.addFaketime(ctx) }},
		{"python3 and redis-py", func() error { return s.addPython(ctx) }},
		{"node and node-redis", func() error { return s.addNode(ctx) }},
	}
	for _, st := range steps {
		if err := st.add(); err != nil {
			return nil, fmt.Errorf("put %s in the image: %w", st.what, err)
		}
	}
	s.add(File{Dst: "/etc/passwd", Mode: 0o644, Body: []byte(
		"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n")})
	s.add(File{Dst: "/etc/group", Mode: 0o644, Body: []byte("root:x:0:\nnogroup:x:65534:\n")})
	return s.files, nil
}

// addRedis copies redis-server as /usr/bin/redis-server, where the harness
// finds it on PATH, and names redis-sentinel after it: Sentinel is the same
// binary.
func (s *fileSet) addRedis(ctx context.Context, bin string) error {
	if bin == "" {
		p, err := exec.LookPath("redis-server")
		if err != nil {
			return errors.New("redis-server not found in PATH: install it (scripts/install-deps.sh)")
		}
		bin = p
	}
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", bin, err)
	}
	if err := s.addELF(ctx, real, "/usr/bin/redis-server"); err != nil {
		return err
	}
	s.add(File{Dst: "/usr/bin/redis-sentinel", Link: "redis-server"})
	return nil
}

// addFaketime copies Debian's faketime and the libfaketime libraries the
// clock faults preload, at their paths, where the harness looks for them.
func (s *fileSet) addFaketime(ctx context.Context) error {
	for _, pkg := range []string{"faketime", "libfaketime"} {
		if ok, _, err := debPackage(ctx, pkg); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("Debian package %s is not installed (scripts/install-deps.sh installs it)", pkg)
		}
	}
	return s.addDebFiles(ctx, []string{"faketime", "libfaketime"}, func(p string) bool {
		return strings.HasPrefix(p, "/usr/bin/") || strings.Contains(filepath.Base(p), ".so")
	})
}

// tagPattern is a Docker image reference: an optional registry host (and
// port), lower-case path components, an optional tag.
var tagPattern = regexp.MustCompile(`^(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?` +
	`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
	`(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$`)

// CheckTag says what is wrong with an image name, before a build finds it.
func CheckTag(tag string) error {
	if !tagPattern.MatchString(tag) {
		return fmt.Errorf("image name %q: want [REGISTRY/]NAME[:TAG], NAME in lower case", tag)
	}
	return nil
}

// TortureTag is the harness image's default name for binary bin:
// locktorture:REVISION.
func TortureTag(bin string) (string, error) {
	rev, err := Revision(bin)
	if err != nil {
		return "", err
	}
	return TortureRepository + ":" + rev, nil
}

// Revision names what binary bin was built from: the commit go build
// stamped into it (12 hex digits, and "-dirty" when the tree had
// uncommitted changes), which is the binary's own; the checkout's HEAD now
// may have moved on since it was built. Without a commit (go run, go test,
// a build outside a repository) it is the module version go install
// stamped, else "content-" and the hash of the binary.
func Revision(bin string) (string, error) {
	if info, err := buildinfo.ReadFile(bin); err == nil {
		var rev string
		dirty := false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			rev = rev[:min(12, len(rev))]
			if dirty {
				rev += "-dirty"
			}
			return rev, nil
		}
		if v := info.Main.Version; v != "" && v != "(devel)" {
			return tagSafe(v), nil
		}
	}
	f, err := os.Open(bin)
	if err != nil {
		return "", fmt.Errorf("read the torture binary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash the torture binary %s: %w", bin, err)
	}
	return "content-" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

// tagSafe turns a module version (v1.2.3+dirty) into a Docker tag.
func tagSafe(v string) string {
	b := []byte(v)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
		if !ok || i == 0 && (c == '.' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b[:min(len(b), 128)])
}
