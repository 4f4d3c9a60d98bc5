package locktorture_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locktorture/locktorture"
)

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#+ (.+)$`)
)

// slug is a heading's anchor as GitHub makes it: lower case, spaces to
// '-', everything but letters, digits, '-' and '_' dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocLinks: every relative link of the README, the pages under docs/
// and results/README.md names a file that exists, and an anchor a heading
// of that file makes; and the README stays a five-minute read.
func TestDocLinks(t *testing.T) {
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "README.md", "results/README.md")
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			body, err := os.ReadFile(path)
			if err != nil {
				if _, statErr := os.Stat(path); statErr != nil {
					t.Errorf("%s links %s: %v", page, target, statErr)
				}
				continue // a folder
			}
			if anchor == "" {
				continue
			}
			found := false
			for _, h := range mdHeading.FindAllStringSubmatch(string(body), -1) {
				if slug(strings.Trim(h[1], "`")) == anchor || slug(h[1]) == anchor {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s links %s: %s has no heading for #%s", page, target, path, anchor)
			}
		}
	}
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 300 {
		t.Errorf("README.md has %d lines; at most 300 keep it a five-minute read (the rest belongs under docs/)", n)
	}
}

// tableNames returns the backticked names in the first column of the
// Markdown table of page whose header line starts with header.
func tableNames(t *testing.T, page, header string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	names, in := map[string]bool{}, false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, header):
			in = true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "|"):
			first := strings.Split(strings.Trim(line, "|"), "|")[0]
			for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(first, -1) {
				names[m[1]] = true
			}
		case in:
			return names
		}
	}
	if len(names) == 0 {
		t.Fatalf("%s has no table with header %q", page, header)
	}
	return names
}

// sameNames reports the names one side has and the other lacks.
func sameNames(t *testing.T, what string, doc, declared map[string]bool) {
	t.Helper()
	for n := range declared {
		if !doc[n] {
			t.Errorf("%s %s is declared but missing from its page's table", what, n)
		}
	}
	for n := range doc {
		if !declared[n] {
			t.Errorf("%s %s is in its page's table but declared nowhere", what, n)
		}
	}
}

// TestDocTables: the tables of docs/checkers.md (every anomaly kind the
// built-in checkers report), docs/topologies.md (every backend, every
// built-in workload) and docs/layout.md (every top-level folder holding
// code) name exactly what the code declares. The lock, fault and flag
// tables have tests of their own (cmd/torture, cli).
func TestDocTables(t *testing.T) {
	regs := locktorture.Builtin()
	kinds := map[string]bool{}
	for _, e := range regs.Checkers.Entries() {
		for k := range e.Kinds {
			kinds[string(k)] = true
		}
	}
	sameNames(t, "anomaly kind", tableNames(t, "docs/checkers.md", "| anomaly |"), kinds)
	workloads := map[string]bool{}
	for _, e := range regs.Workloads.Entries() {
		workloads[e.Name] = true
	}
	sameNames(t, "workload", tableNames(t, "docs/topologies.md", "| workload |"), workloads)
	backends := map[string]bool{locktorture.BackendLocal: true, locktorture.BackendDocker: true, locktorture.BackendExternal: true}
	sameNames(t, "backend", tableNames(t, "docs/topologies.md", "| backend |"), backends)

	folders := tableNames(t, "docs/layout.md", "| folder |")
	for f := range folders {
		if _, err := os.Stat(strings.TrimSuffix(f, "/")); err != nil {
			t.Errorf("docs/layout.md names %s: %v", f, err)
		}
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		code, _ := filepath.Glob(filepath.Join(e.Name(), "*.go"))
		sub, _ := filepath.Glob(filepath.Join(e.Name(), "*", "*.go"))
		covered := false
		for f := range folders {
			covered = covered || strings.HasPrefix(f, e.Name()+"/")
		}
		if len(code)+len(sub) > 0 && !covered {
			t.Errorf("folder %s/ holds code but docs/layout.md does not say what for", e.Name())
		}
	}
}
