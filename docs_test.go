package locktorture_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
