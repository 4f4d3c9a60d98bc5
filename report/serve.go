package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Server serves a results folder over HTTP, as `torture serve` does: an
// index of every run and matrix under the folder, built on each request so
// that runs landing while it is up appear on the next load, and the files
// themselves (reports, histories, summaries, matrix pages) as they are on
// disk. It reads through an os.Root, so no path or symlink leads outside
// the folder, and it answers only GET and HEAD.
type Server struct {
	name  string
	root  *os.Root
	files http.Handler

	mu    sync.Mutex
	cache map[string]cachedRun // per run folder, what the index read of it
}

type cachedRun struct {
	stamp string
	rd    RunDir
}

// maxMatrixFile bounds matrix.json, which is untrusted input like a history.
const maxMatrixFile = 64 << 20

// maxDepth bounds how deep under the folder the index looks for runs and
// matrices: results/<run>, results/<matrix>/runs/<run>, and one level more.
const maxDepth = 4

// NewServer serves dir. Close releases it.
func NewServer(dir string) (*Server, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("serve %s: %w", dir, err)
	}
	name := filepath.Base(filepath.Clean(dir))
	return &Server{name: name, root: root, files: http.FileServerFS(root.FS()), cache: map[string]cachedRun{}}, nil
}

// Close releases the folder.
func (s *Server) Close() error { return s.root.Close() }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	switch {
	case r.URL.Path == "/" || r.URL.Path == "/"+IndexFileName:
		s.serveIndex(w, r)
		return
	case r.URL.Path == "/favicon.ico":
		w.WriteHeader(http.StatusNoContent) // none; a browser asks anyway
		return
	case strings.HasSuffix(r.URL.Path, ".jsonl"):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	s.files.ServeHTTP(w, r)
}

// MatrixDir is one matrix folder found under the served folder.
type MatrixDir struct {
	Name        string // folder, relative to the served folder
	Title       string
	Started     string
	Cells       int
	AsExpected  int
	Runs        int
	Errors      int
	Interrupted bool
	Page        string // link to its grid page (or matrix.md), relative
}

// matrixFile is the part of matrix.json the index reads (package matrix
// imports this one, so it is read into a struct of its own).
type matrixFile struct {
	Name        string            `json:"name"`
	Started     time.Time         `json:"started"`
	Runs        int               `json:"runs"`
	Cells       []json.RawMessage `json:"cells"`
	AsExpected  int               `json:"as_expected"`
	Errors      int               `json:"errors"`
	Interrupted bool              `json:"interrupted"`
}

// Scan lists the runs and matrices under the served folder. A run inside a
// matrix folder is reached through the matrix's page, not listed again.
func (s *Server) Scan(ctx context.Context) ([]RunDir, []MatrixDir, error) {
	fsys := s.root.FS()
	var runs []RunDir
	var ms []MatrixDir
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if name == "." {
				return err
			}
			return nil // an unreadable folder hides only itself
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if !d.IsDir() {
			return nil
		}
		if name != "." && strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		switch {
		case exists(fsys, path.Join(name, "matrix.json")):
			ms = append(ms, matrixDirOf(fsys, name))
			return fs.SkipDir
		case exists(fsys, path.Join(name, "history.jsonl")):
			runs = append(runs, s.runDir(fsys, name))
			return fs.SkipDir
		case strings.Count(name, "/")+1 >= maxDepth:
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("scan %s: %w", s.name, err)
	}
	sortRuns(runs)
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Started > ms[j].Started })
	return runs, ms, nil
}

// runDir is runDirOf, read again only when the folder's summary or report
// changed: a long summary is decoded once, not on every load of the index.
func (s *Server) runDir(fsys fs.FS, name string) RunDir {
	var stamp strings.Builder
	for _, f := range []string{"summary.json", FileName} {
		if st, err := fs.Stat(fsys, path.Join(name, f)); err == nil {
			fmt.Fprintf(&stamp, "%s %d %d;", f, st.Size(), st.ModTime().UnixNano())
		}
	}
	s.mu.Lock()
	c, ok := s.cache[name]
	s.mu.Unlock()
	if ok && c.stamp == stamp.String() && c.rd.Run != nil {
		return c.rd
	}
	rd := runDirOf(fsys, name)
	s.mu.Lock()
	s.cache[name] = cachedRun{stamp: stamp.String(), rd: rd}
	s.mu.Unlock()
	return rd
}

// matrixDirOf reads what the index shows of the matrix folder at name.
func matrixDirOf(fsys fs.FS, name string) MatrixDir {
	md := MatrixDir{Name: name, Title: name, Page: path.Join(name, "matrix.md")}
	if exists(fsys, path.Join(name, IndexFileName)) {
		md.Page = name + "/"
		if name == "." {
			md.Page = IndexFileName
		}
	}
	f, err := fsys.Open(path.Join(name, "matrix.json"))
	if err != nil {
		return md
	}
	defer f.Close()
	var m matrixFile
	if json.NewDecoder(io.LimitReader(f, maxMatrixFile)).Decode(&m) != nil {
		return md
	}
	if m.Name != "" {
		md.Title = m.Name
	}
	if !m.Started.IsZero() {
		md.Started = fmtStarted(m.Started)
	}
	md.Cells, md.AsExpected, md.Runs, md.Errors, md.Interrupted = len(m.Cells), m.AsExpected, m.Runs, m.Errors, m.Interrupted
	return md
}

type serveView struct {
	Name     string
	Now      string
	Matrices []MatrixDir
	Runs     []indexRow
}

var serveTmpl = template.Must(template.New("serve").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>locktorture: {{.Name}}</title>
<style>` + baseCSS + `</style></head><body><main>
<h1>locktorture: {{.Name}}</h1>
<p class="muted">{{len .Matrices}} matrices and {{len .Runs}} runs, newest first, as of {{.Now}}. Reload to see runs that landed since.</p>
<h2>Matrices</h2>
{{if .Matrices}}<table id="matrices"><tr><th>started</th><th>matrix</th><th>cells as expected</th><th>runs</th><th>harness errors</th></tr>
{{range .Matrices}}<tr class="matrix-row"><td>{{.Started}}</td><td><a href="{{.Page}}">{{.Title}}</a>{{if ne .Name .Title}} <span class="muted small">{{.Name}}</span>{{end}}</td>
<td>{{.AsExpected}} of {{.Cells}}{{if .Interrupted}} (interrupted){{end}}</td><td>{{.Runs}}</td><td>{{.Errors}}</td></tr>{{end}}
</table>{{else}}<p class="muted">None.</p>{{end}}
<h2>Runs</h2>
{{with .Runs}}` + runsTable + `{{else}}<p class="muted">None yet.</p>{{end}}
</main></body></html>
`))

func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request) {
	runs, ms, err := s.Scan(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	v := serveView{Name: s.name, Now: fmtStarted(time.Now()), Matrices: ms, Runs: indexRows(runs)}
	var buf bytes.Buffer
	if err := serveTmpl.Execute(&buf, v); err != nil {
		http.Error(w, "render index: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}
