package museum

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/locktorture/locktorture/locks/program"
)

// Built is what building an exhibit made: each step's output, with the
// version of the library a Go program holds, read back from the binary.
type Built struct {
	Step
	// Holds is "module@version" as the binary's build information gives
	// it, for a Go step that names its module.
	Holds string `json:"holds,omitempty"`
}

// build makes e's lock programs in bin: each Go step's binary, built in the
// exhibit's folder with its module file and no workspace (a checkout's
// go.work would raise the pin to the adapters' version), and each script
// beside the lock protocol's helpers. The Debian packages it needs are
// checked first. An error names the exhibit, the step and the cause in one
// line.
func build(ctx context.Context, e *Exhibit, bin string) ([]Built, error) {
	for _, p := range e.Debian {
		if err := installed(ctx, p); err != nil {
			return nil, fmt.Errorf("exhibit %s: %w", e.Slug, err)
		}
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, fmt.Errorf("exhibit %s: %w", e.Slug, err)
	}
	var out []Built
	scripts := false
	for _, s := range e.Build {
		b := Built{Step: s}
		var err error
		if s.Go != "" {
			b.Holds, err = buildGo(ctx, e, s, bin)
		} else {
			scripts = true
			err = copyFile(filepath.Join(e.Dir, s.Script), filepath.Join(bin, s.Script))
		}
		if err != nil {
			return nil, fmt.Errorf("exhibit %s: %w", e.Slug, err)
		}
		out = append(out, b)
	}
	if scripts {
		for name, src := range program.ProtocolHelpers() {
			if err := os.WriteFile(filepath.Join(bin, name), []byte(src), 0o644); err != nil {
				return nil, fmt.Errorf("exhibit %s: %w", e.Slug, err)
			}
		}
	}
	return out, nil
}

// buildGo builds the exhibit's main package with s's module file and
// returns the module version the binary holds.
func buildGo(ctx context.Context, e *Exhibit, s Step, bin string) (string, error) {
	dir, err := filepath.Abs(e.Dir)
	if err != nil {
		return "", err
	}
	exe := filepath.Join(bin, s.Out)
	cmd := exec.CommandContext(ctx, "go", "build", "-modfile="+filepath.Join(dir, s.Go), "-o", exe, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s with %s: %w: %s", s.Out, s.Go, err, lastLines(string(msg), 3))
	}
	if s.Module == "" {
		return "", nil
	}
	info, err := buildinfo.ReadFile(exe)
	if err != nil {
		return "", fmt.Errorf("read the build information of %s: %w", s.Out, err)
	}
	for _, d := range info.Deps {
		if d.Path != s.Module {
			continue
		}
		v := d.Version
		if d.Replace != nil {
			v = d.Replace.Version
		}
		if v != s.Version {
			return "", fmt.Errorf("%s holds %s@%s, not %s as the exhibit says: %s pins another version", s.Out, s.Module, v, s.Version, s.Go)
		}
		return s.Module + "@" + v, nil
	}
	return "", fmt.Errorf("%s holds no %s: %s's program does not use the library it exhibits", s.Out, s.Module, s.Go)
}

// installed checks that Debian's package p is installed at the version the
// exhibit pins (a prefix of the installed one: 4.3.4 matches 4.3.4-3).
func installed(ctx context.Context, p Package) error {
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f", "${Status}|${Version}", p.Name).Output()
	if err != nil {
		return fmt.Errorf("Debian package %s (%s) is not installed: scripts/install-deps.sh installs it", p.Name, p.Version)
	}
	status, version, _ := strings.Cut(string(out), "|")
	if !strings.HasSuffix(status, " installed") {
		return fmt.Errorf("Debian package %s (%s) is not installed (%s): scripts/install-deps.sh installs it", p.Name, p.Version, status)
	}
	if !strings.HasPrefix(version, p.Version) {
		return fmt.Errorf("Debian package %s is at %s here; the exhibit shows %s", p.Name, version, p.Version)
	}
	return nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("copy %s: %w", filepath.Base(from), err)
	}
	return os.WriteFile(to, b, 0o644)
}

// lastLines is the last n non-empty lines of s, joined on one line.
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines[max(0, len(lines)-n):], " / ")
}
