// Package museum keeps reported bugs of real Redis lock libraries: one
// exhibit per bug, each running the library's own code at the version that
// had the bug and at the version that fixed it (or beside the setting that
// avoids it), with a matrix spec whose buggy cell expects the anomaly and
// whose fixed cell expects the lock to hold. It builds each exhibit's lock
// programs, runs its spec with the torture command, and writes the museum's
// page over every exhibit's matrix.
//
// An exhibit is one folder (bugs/<slug>/): exhibit.yaml says what it shows
// and how to build it, spec.yaml is the matrix, README.md its page, and the
// lock's sources sit beside them: a Go module pinned to the buggy version
// (go.mod) with a module file for the fixed one (fixed.mod), or a script
// over a Debian package. The spec names its programs under
// $LOCKTORTURE_EXHIBIT, the folder the museum builds them into, so a run's
// replay command and history name no path of the machine that ran it.
package museum

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// ExhibitEnv names the folder an exhibit's programs are built into; its
// spec's locks name them as exec:$LOCKTORTURE_EXHIBIT/<out>.
const ExhibitEnv = "LOCKTORTURE_EXHIBIT"

// Exhibit is one reported bug, from its exhibit.yaml.
type Exhibit struct {
	// Title says what the bug does, in a line.
	Title string `yaml:"title"`
	// Library is the lock library and where it comes from (a Go module
	// path, a Debian package).
	Library string `yaml:"library"`
	// Report is the URL of the issue or pull request that reported it;
	// Fix, the URL of the change that fixed it, when there is one.
	Report string `yaml:"report"`
	Fix    string `yaml:"fix"`
	// Found says, for a bug nobody reported, how it was found: "reading"
	// (by reading the library's source) or "locktorture" (by a run);
	// Evidence is then the source lines that show it, a URL to them or
	// path:lines at the version. The page says so in words, where a
	// reported bug has its link.
	Found    string `yaml:"found"`
	Evidence string `yaml:"evidence"`
	// Buggy and Fixed name the two sides: the versions, or for a bug no
	// version fixed, the setting or API that avoids it.
	Buggy string `yaml:"buggy"`
	Fixed string `yaml:"fixed"`
	// Build lists how its lock programs are made, in order.
	Build []Step `yaml:"build"`
	// Debian lists the packages the exhibit runs against, each at the
	// version it pins (a prefix of the installed version).
	Debian []Package `yaml:"debian"`
	// Spec is the matrix spec, relative to the folder; default spec.yaml.
	Spec string `yaml:"spec"`

	// Slug is the folder's name; Dir its path.
	Slug string `yaml:"-"`
	Dir  string `yaml:"-"`
}

// Step is one build step: a Go lock program built from the folder with one
// module file, or a script copied beside the lock protocol's helpers.
type Step struct {
	// Go is the module file to build the folder's main package with
	// (go.mod, fixed.mod, ...), outside any workspace; Out names the
	// binary. Module and Version, when set, are checked in the binary's
	// build information: one binary holds one version of a module.
	Go      string `yaml:"go" json:"go,omitempty"`
	Out     string `yaml:"out" json:"out,omitempty"`
	Module  string `yaml:"module" json:"module,omitempty"`
	Version string `yaml:"version" json:"version,omitempty"`
	// Script is a program file (lock.py, lock.php) copied as it is.
	Script string `yaml:"script" json:"script,omitempty"`
}

// Package is a Debian package an exhibit needs, at the version it pins.
type Package struct {
	Name    string `yaml:"name"`
	Version string `yaml:"version"`
}

// FileName is an exhibit's description in its folder.
const FileName = "exhibit.yaml"

var (
	slugRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	outRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// Load reads the exhibit in dir strictly: an unknown field, a missing one
// or a step that is neither a Go build nor a script is an error naming the
// exhibit and the problem.
func Load(dir string) (*Exhibit, error) {
	slug := filepath.Base(dir)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("exhibit %s: "+format, append([]any{slug}, args...)...)
	}
	if !slugRE.MatchString(slug) {
		return nil, fail("folder name: use lower-case letters, digits, '.', '_' and '-'")
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return nil, fail("%v", err)
	}
	var e Exhibit
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&e); err != nil {
		return nil, fail("%s: %v", FileName, oneLine(err))
	}
	e.Slug, e.Dir = slug, dir
	if e.Spec == "" {
		e.Spec = "spec.yaml"
	}
	if err := e.check(); err != nil {
		return nil, fail("%s: %v", FileName, err)
	}
	return &e, nil
}

func (e *Exhibit) check() error {
	for _, f := range []struct{ name, v string }{{"title", e.Title}, {"library", e.Library},
		{"buggy", e.Buggy}, {"fixed", e.Fixed}} {
		if strings.TrimSpace(f.v) == "" {
			return fmt.Errorf("no %s", f.name)
		}
	}
	if err := e.checkSource(); err != nil {
		return err
	}
	if !filepath.IsLocal(e.Spec) {
		return fmt.Errorf("spec %q: want a file in the exhibit's folder", e.Spec)
	}
	outs := map[string]bool{}
	for i, s := range e.Build {
		switch {
		case (s.Go == "") == (s.Script == ""):
			return fmt.Errorf("build step %d: want one of go (a module file) or script", i+1)
		case s.Go != "" && (!filepath.IsLocal(s.Go) || !strings.HasSuffix(s.Go, ".mod")):
			return fmt.Errorf("build step %d: go %q: want a module file (*.mod) in the exhibit's folder", i+1, s.Go)
		case s.Go != "" && !outRE.MatchString(s.Out):
			return fmt.Errorf("build step %d: out %q: want a file name", i+1, s.Out)
		case s.Go != "" && (s.Module == "") != (s.Version == ""):
			return fmt.Errorf("build step %d: module and version go together", i+1)
		case s.Script != "" && (!filepath.IsLocal(s.Script) || strings.ContainsRune(s.Script, filepath.Separator)):
			return fmt.Errorf("build step %d: script %q: want a file of the exhibit's folder", i+1, s.Script)
		case s.Script != "" && (s.Out != "" || s.Module != "" || s.Version != ""):
			return fmt.Errorf("build step %d: a script is copied as it is: no out, module or version", i+1)
		}
		out := s.Out
		if s.Script != "" {
			out = s.Script
		}
		if outs[out] {
			return fmt.Errorf("build step %d: %s is built twice", i+1, out)
		}
		outs[out] = true
	}
	for _, p := range e.Debian {
		if p.Name == "" || p.Version == "" {
			return errors.New("debian: every package needs a name and a version")
		}
	}
	return nil
}

// Finders are the ways a bug nobody reported was found (Exhibit.Found).
var Finders = map[string]string{"reading": "found by reading the source", "locktorture": "found by locktorture"}

// checkSource checks where the bug comes from: a report's and a fix's
// URLs, or for a bug nobody reported, how it was found and the lines
// that show it. A sentence where a URL belongs would become a broken
// link on the page.
func (e *Exhibit) checkSource() error {
	for _, f := range []struct{ name, v string }{{"report", e.Report}, {"fix", e.Fix}} {
		if f.v != "" && !IsURL(f.v) {
			return fmt.Errorf("%s %q: want the URL of the issue or pull request (a bug nobody reported has found: reading or locktorture, and evidence: the lines that show it)", f.name, f.v)
		}
	}
	if e.Found != "" && Finders[e.Found] == "" {
		return fmt.Errorf("found %q: want reading or locktorture", e.Found)
	}
	switch {
	case e.Report == "" && e.Found == "":
		return errors.New("no report: give its URL, or for a bug nobody reported found: reading (or locktorture) and evidence: the lines that show it")
	case e.Report == "" && strings.TrimSpace(e.Evidence) == "":
		return errors.New("no evidence: a bug nobody reported names the source lines that show it (a URL to them, or path:lines at the version)")
	}
	return nil
}

// IsURL reports whether s is an http or https URL with a host: what the
// page may link to.
func IsURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && !strings.ContainsAny(s, " \t\n")
}

// oneLine folds an error's lines into one.
func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
