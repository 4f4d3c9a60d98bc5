package museum

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/cluster/clustertest"
)

// write makes files (name -> content) under dir.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const okExhibit = `title: t
library: l
report: https://example.com/1
buggy: v1
fixed: v2
`

// TestLoadRefuses: an exhibit.yaml is untrusted input, read strictly; each
// defect is one line naming the exhibit and the problem.
func TestLoadRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown field", okExhibit + "colour: red\n", "field colour not found"},
		{"no title", strings.Replace(okExhibit, "title: t\n", "", 1), "no title"},
		{"step of two kinds", okExhibit + "build:\n  - go: go.mod\n    out: b\n    script: x.py\n", "want one of go"},
		{"module file elsewhere", okExhibit + "build:\n  - go: ../go.mod\n    out: b\n", "in the exhibit's folder"},
		{"no out", okExhibit + "build:\n  - go: go.mod\n", `out ""`},
		{"version without module", okExhibit + "build:\n  - go: go.mod\n    out: b\n    version: v1\n", "module and version go together"},
		{"two outputs of one name", okExhibit + "build:\n  - go: go.mod\n    out: b\n  - go: fixed.mod\n    out: b\n", "built twice"},
		{"spec outside", okExhibit + "spec: ../spec.yaml\n", "want a file in the exhibit's folder"},
		{"package without version", okExhibit + "debian: [{name: python3-redis}]\n", "a name and a version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ex-1")
			write(t, dir, map[string]string{FileName: tc.yaml})
			_, err := Load(dir)
			if err == nil {
				t.Fatal("loaded")
			}
			if msg := err.Error(); !strings.Contains(msg, "exhibit ex-1") || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming exhibit ex-1 and %q", msg, tc.want)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "Bad Name")); err == nil || !strings.Contains(err.Error(), "folder name") {
		t.Errorf("a folder name with spaces: %v", err)
	}
}

// TestExhibitsThatCannotBeShown: an exhibit whose module does not build,
// and one whose Debian package is not at its version, are each one line
// naming it, and the museum still runs the others.
func TestExhibitsThatCannotBeShown(t *testing.T) {
	clustertest.Need(t)
	tmp := t.TempDir()
	torture := filepath.Join(tmp, "torture")
	if out, err := exec.Command("go", "build", "-o", torture, "../cmd/torture").CombinedOutput(); err != nil {
		t.Fatalf("build torture: %v\n%s", err, out)
	}
	bugs := filepath.Join(tmp, "bugs")
	write(t, bugs, map[string]string{
		"does-not-build/" + FileName: okExhibit + "build:\n  - go: go.mod\n    out: buggy\n",
		"does-not-build/go.mod":      "module example.com/broken\n\ngo 1.26\n",
		"does-not-build/main.go":     "package main\n\nfunc main() { undefined() }\n",
		"wrong-package/" + FileName:  okExhibit + "debian: [{name: dpkg, version: 0.0.1}]\n",
		"holds/" + FileName:          okExhibit,
		"holds/spec.yaml": `seeds: [1]
defaults: {clients: 2, ttl: 300ms, hold: 5ms..20ms, duration: 1s}
cells:
  - name: fixed
    lock: token
    side: fixed
    expect: holds
  - name: buggy
    lock: set-px
    side: buggy
    overrun: 0.3
    duration: 2s
    expect: {breaks: {kind: foreign-release}}
  - name: other
    lock: token
    side: fixed
    expect: holds
`,
	})
	// The matrix's flags reach each exhibit's matrix: only the cells
	// named, and the breaking one for its whole duration.
	res, err := Run(context.Background(), Options{Dir: bugs, Out: filepath.Join(tmp, "out"), Torture: torture,
		Matrix: []string{"--cells", "fixed,buggy", "--full-runs"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ExhibitResult{}
	for _, x := range res.Exhibits {
		got[x.Slug] = x
	}
	for slug, want := range map[string]string{"does-not-build": "build buggy with go.mod", "wrong-package": "Debian package dpkg is at"} {
		msg := got[slug].Error
		if !strings.Contains(msg, "exhibit "+slug) || !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Errorf("%s: error %q, want one line naming it and %q", slug, msg, want)
		}
	}
	x := got["holds"]
	if !x.AsExpected || x.Error != "" || len(x.Cells) != 2 || x.Cells[0].Name != "fixed" || x.Cells[1].Name != "buggy" {
		t.Fatalf("the exhibit that can be shown, its cells fixed and buggy only: %+v", x)
	}
	if s := x.Cells[1].Seeds[0]; s.DurationMs < 2000 || !s.Detected {
		t.Errorf("the breaking cell's run took %d ms, want its whole 2s duration (--full-runs): %+v", s.DurationMs, s)
	}
	if !strings.Contains(x.FirstAnomaly, "buggy (buggy: v1) showed foreign-release in 1 of 1 seeds, the first ") ||
		!strings.Contains(x.Excerpt, "foreign-release") {
		t.Errorf("sentence %q, quote %q", x.FirstAnomaly, x.Excerpt)
	}
	if res.Code() != 2 {
		t.Errorf("exit code %d, want 2: two exhibits could not be shown", res.Code())
	}
	for _, f := range []string{JSONFile, MarkdownFile, PageFile} {
		if _, err := os.Stat(filepath.Join(tmp, "out", f)); err != nil {
			t.Error(err)
		}
	}
}
