package report

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/summary"
)

// IndexFileName is the name of a results folder's index.
const IndexFileName = "index.html"

// RunDir is one run folder found in a results folder.
type RunDir struct {
	Name    string // folder name, relative to the results folder
	Run     *history.RunInfo
	Verdict string // empty when the folder has no summary.json
	Counts  string
	Ops     int64
	Report  bool // report.html exists
}

// RunDirs lists the run folders directly under resultsDir: every folder
// holding a history.jsonl. A folder whose summary or header cannot be read
// is listed with what could be read; it is not an error for the others.
func RunDirs(ctx context.Context, resultsDir string) ([]RunDir, error) {
	entries, err := os.ReadDir(resultsDir)
	if err != nil {
		return nil, fmt.Errorf("read results folder: %w", err)
	}
	fsys := os.DirFS(resultsDir)
	var out []RunDir
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !e.IsDir() || !exists(fsys, path.Join(e.Name(), "history.jsonl")) {
			continue
		}
		out = append(out, runDirOf(fsys, e.Name()))
	}
	sortRuns(out)
	return out, nil
}

// runDirOf reads what the index shows of the run folder at name in fsys.
func runDirOf(fsys fs.FS, name string) RunDir {
	rd := RunDir{Name: name}
	if s, err := summary.ReadFS(fsys, path.Join(name, summary.FileName)); err == nil && s != nil {
		rd.Run, rd.Verdict = s.Run, string(s.Verdict)
		rd.Counts = checker.CountText(s.Counts, s.Classes)
		rd.Ops = s.Stats.Ops
	}
	if rd.Run == nil {
		rd.Run = readHeader(fsys, path.Join(name, "history.jsonl"))
	}
	rd.Report = exists(fsys, path.Join(name, FileName))
	return rd
}

func exists(fsys fs.FS, name string) bool {
	_, err := fs.Stat(fsys, name)
	return err == nil
}

// sortRuns puts the newest run first.
func sortRuns(out []RunDir) {
	sort.SliceStable(out, func(i, j int) bool {
		ti, tj := started(out[i]), started(out[j])
		if ti != tj {
			return ti > tj
		}
		return out[i].Name > out[j].Name
	})
}

func started(r RunDir) string {
	if r.Run == nil {
		return ""
	}
	return r.Run.Started.UTC().Format("2006-01-02T15:04:05.000000000")
}

// readHeader reads only the first line of a history, for the index: loading
// and validating a long history just to list it would be slow.
func readHeader(fsys fs.FS, name string) *history.RunInfo {
	f, err := fsys.Open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), history.MaxLine)
	if !sc.Scan() {
		return nil
	}
	var e history.Event
	if err := json.NewDecoder(bytes.NewReader(sc.Bytes())).Decode(&e); err != nil {
		return nil
	}
	return e.Run
}

type indexRow struct {
	RunDir
	Started, Lock, Setup, Faults string
}

// runsTable is the table of runs of an index, for rows of []indexRow;
// links are relative to the page.
const runsTable = `<table id="runs"><tr><th>started</th><th>run</th><th>lock</th><th>setup</th><th>faults</th><th>verdict</th><th>anomalies</th><th>ops</th></tr>
{{range .}}<tr class="run-row"><td>{{.Started}}</td>
<td>{{if .Report}}<a href="{{.Name}}/report.html">{{.Name}}</a>{{else}}<a href="{{.Name}}/">{{.Name}}</a> <span class="muted small">({{if .Verdict}}no report: torture report {{.Name}}{{else}}running, or ended without a summary{{end}})</span>{{end}}
<span class="small">[<a href="{{.Name}}/history.jsonl">history</a>]</span></td>
<td>{{.Lock}}</td><td>{{.Setup}}</td><td>{{.Faults}}</td>
<td>{{if .Verdict}}<span class="verdict verdict-{{.Verdict}}">{{.Verdict}}</span>{{else}}<span class="muted">not checked</span>{{end}}</td>
<td>{{.Counts}}</td><td>{{if .Ops}}{{.Ops}}{{end}}</td></tr>{{end}}
</table>`

var indexTmpl = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>locktorture runs</title>
<style>` + baseCSS + `</style></head><body><main>
<h1>locktorture runs</h1>
<p class="muted">{{len .}} run folders, newest first. Each links to its report.</p>
` + runsTable + `</main></body></html>
`))

// indexRows are the rows of an index of runs.
func indexRows(runs []RunDir) []indexRow {
	rows := make([]indexRow, len(runs))
	for i, r := range runs {
		row := indexRow{RunDir: r}
		if ri := r.Run; ri != nil {
			row.Started, row.Lock = fmtStarted(ri.Started), ri.LockLabel()
			row.Setup = fmt.Sprintf("%s, %s, %d clients, ttl %v, seed %d", ri.Workload, ri.Topology, ri.Clients, ri.TTL(), ri.Seed)
			row.Faults = ri.FaultsText()
		}
		rows[i] = row
	}
	return rows
}

// Index writes resultsDir/index.html listing every run folder there (see
// RunDirs) and returns its path.
func Index(ctx context.Context, resultsDir string) (string, error) {
	runs, err := RunDirs(ctx, resultsDir)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := indexTmpl.Execute(&buf, indexRows(runs)); err != nil {
		return "", fmt.Errorf("render index: %w", err)
	}
	path := filepath.Join(resultsDir, IndexFileName)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("write index: %w", err)
	}
	return path, nil
}
