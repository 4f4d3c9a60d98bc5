package matrix_test

import (
	"context"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/report"
)

const movedSpec = `
name: moved
seeds: [1]
defaults: {clients: 4, ttl: 150ms, hold: 5ms..20ms, duration: 1500ms}
cells:
  - name: set-px-overrun
    lock: set-px
    overrun: 0.3
    expect: {breaks: {kind: double-holder}}
  - lock: token
    expect: holds
`

// TestMovedFoldersKeepTheirLinks: a results folder (a run that broke, with
// porcupine's page, and its index) and a matrix folder are moved elsewhere,
// as a zip or an attachment would move them; every link of every page in
// them still resolves (files and #anchors), and no file they hold names
// the folder they were written in or the one they moved to.
func TestMovedFoldersKeepTheirLinks(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	base := t.TempDir()
	results, out := filepath.Join(base, "written", "results"), filepath.Join(base, "written", "matrix")
	res, err := locktorture.Run(ctx, locktorture.Options{Lock: "set-px", Clients: 4, TTL: 150 * time.Millisecond,
		HoldMin: 5 * time.Millisecond, HoldMax: 20 * time.Millisecond, Overrun: 0.3, Duration: 1500 * time.Millisecond,
		Seed: 1, OutDir: results, RunID: "set-px-overrun"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, "linearizability.html")); err != nil {
		t.Fatalf("the broken run wrote no linearizability.html (verdict %s): %v", res.Verdict, err)
	}
	if _, err := report.Index(ctx, results); err != nil {
		t.Fatal(err)
	}
	spec, err := matrix.Parse(strings.NewReader(movedSpec), "moved", locktorture.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	mres, err := matrix.Run(ctx, spec, matrix.Options{OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if err := mres.WriteFiles(out); err != nil {
		t.Fatal(err)
	}

	moved := filepath.Join(base, "elsewhere")
	if err := os.Rename(filepath.Join(base, "written"), moved); err != nil {
		t.Fatal(err)
	}
	pages := 0
	err = filepath.WalkDir(moved, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), base) {
			t.Errorf("%s names an absolute path under %s", rel(moved, p), base)
		}
		if strings.HasSuffix(p, ".html") && !strings.HasPrefix(d.Name(), "linearizability") {
			pages++
			checkLinks(t, moved, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The results index, the run's report, the matrix page and its two runs' reports.
	if pages < 5 {
		t.Errorf("%d pages checked, want at least 5", pages)
	}
}

func rel(base, p string) string {
	r, err := filepath.Rel(base, p)
	if err != nil {
		return p
	}
	return r
}

// checkLinks follows every href and src of the page at file: each names a
// file (or folder) that exists, and each #anchor an element of its page.
func checkLinks(t *testing.T, base, file string) {
	t.Helper()
	links, _ := parsePage(t, file)
	if len(links) == 0 {
		t.Errorf("%s has no link", rel(base, file))
	}
	for _, l := range links {
		u, err := url.Parse(l)
		switch {
		case err != nil:
			t.Errorf("%s: link %q does not parse: %v", rel(base, file), l, err)
			continue
		case u.Scheme == "http" || u.Scheme == "https":
			continue // the web, e.g. porcupine's project page
		case u.Scheme != "" || u.Host != "" || strings.HasPrefix(u.Path, "/"):
			t.Errorf("%s: link %q is not relative to the page", rel(base, file), l)
			continue
		}
		target := file
		if u.Path != "" {
			target = filepath.Join(filepath.Dir(file), filepath.FromSlash(path.Clean(u.Path)))
		}
		if _, err := os.Stat(target); err != nil {
			t.Errorf("%s: link %q leads nowhere: %v", rel(base, file), l, err)
			continue
		}
		if u.Fragment != "" && strings.HasSuffix(target, ".html") {
			if _, ids := parsePage(t, target); !ids[u.Fragment] {
				t.Errorf("%s: link %q: no element #%s there", rel(base, file), l, u.Fragment)
			}
		}
	}
}

// parsePage returns the links (href, src) and the element ids of a page.
func parsePage(t *testing.T, file string) ([]string, map[string]bool) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := html.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var links []string
	ids := map[string]bool{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for _, a := range n.Attr {
			switch a.Key {
			case "href", "src":
				links = append(links, a.Val)
			case "id":
				ids[a.Val] = true
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return links, ids
}
