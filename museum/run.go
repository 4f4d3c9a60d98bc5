package museum

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/summary"
)

// Options say which exhibits to run and how.
type Options struct {
	// Dir holds the exhibits, one folder each (bugs/).
	Dir string
	// Out receives the museum: a folder per exhibit (its programs under
	// bin/, its matrix, its page) and the museum's own files.
	Out string
	// Exhibits names the exhibits to run (their folders); empty: all.
	Exhibits []string
	// Seeds, when set, replaces every spec's seeds (matrix --seeds).
	Seeds string
	// Matrix holds the further `torture matrix` flags each exhibit's
	// matrix runs with (--cells, --full-runs, --shrink, ...); --seeds is
	// Seeds. A --cells that matches no cell of an exhibit is that
	// exhibit's error.
	Matrix []string
	// Torture is the torture binary that runs each exhibit's spec: the
	// running one by default. It must know the locks the specs name.
	Torture string
	// Progress receives the child matrices' lines and the museum's own;
	// nil: none.
	Progress io.Writer
}

// Find lists the exhibits of dir: its folders holding an exhibit.yaml, by
// name.
func Find(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read the museum %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), FileName)); err == nil {
				out = append(out, e.Name())
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the museum %s holds no exhibit (a folder with %s)", dir, FileName)
	}
	return out, nil
}

// Run builds and runs the exhibits and writes the museum into o.Out. An
// exhibit that cannot be loaded, built or run is one line in its result
// (Error) and the others still run; the error returned is the museum's
// own (a bad option, an unwritable folder).
func Run(ctx context.Context, o Options) (*Result, error) {
	slugs, err := Find(o.Dir)
	if err != nil {
		return nil, err
	}
	if len(o.Exhibits) > 0 {
		for _, name := range o.Exhibits {
			if !slices.Contains(slugs, name) {
				return nil, fmt.Errorf("no exhibit %q in %s (it has: %s)", name, o.Dir, strings.Join(slugs, ", "))
			}
		}
		slugs = o.Exhibits
	}
	if o.Torture == "" {
		if o.Torture, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find the torture binary: %w", err)
		}
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	res := &Result{Started: time.Now().UTC(), Seeds: o.Seeds}
	for i, slug := range slugs {
		o.logf("exhibit %d/%d %s", i+1, len(slugs), slug)
		x := o.exhibit(ctx, slug)
		if x.Error != "" {
			o.logf("exhibit %s: %s", slug, x.Error)
		}
		res.add(x)
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
	}
	res.DurationMs = time.Since(res.Started).Milliseconds()
	return res, res.write(o.Out)
}

func (o Options) logf(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// exhibit loads, builds and runs one exhibit.
func (o Options) exhibit(ctx context.Context, slug string) ExhibitResult {
	x := ExhibitResult{Slug: slug, Dir: slug}
	e, err := Load(filepath.Join(o.Dir, slug))
	if err != nil {
		x.Error = err.Error()
		return x
	}
	x.describe(e)
	out := filepath.Join(o.Out, slug)
	bin, err := filepath.Abs(filepath.Join(out, "bin"))
	if err != nil {
		x.Error = err.Error()
		return x
	}
	if x.Built, err = build(ctx, e, bin); err != nil {
		x.Error = oneLine(err)
		return x
	}
	_ = copyFile(filepath.Join(e.Dir, "README.md"), filepath.Join(out, "README.md"))
	if err := checkSides(e); err != nil {
		x.Error = oneLine(err)
		return x
	}
	m, err := o.runSpec(ctx, e, out, bin)
	if err != nil {
		x.Error = fmt.Sprintf("exhibit %s: %s", slug, oneLine(err))
		return x
	}
	x.take(m, out)
	return x
}

// runSpec runs the exhibit's spec with the torture binary, its programs
// found under bin through ExhibitEnv, and reads back its matrix.json.
func (o Options) runSpec(ctx context.Context, e *Exhibit, out, bin string) (*matrix.Result, error) {
	spec, err := filepath.Abs(filepath.Join(e.Dir, e.Spec))
	if err != nil {
		return nil, err
	}
	args := []string{"matrix", spec, "--out", out, "--quiet"}
	if o.Seeds != "" {
		args = append(args, "--seeds", o.Seeds)
	}
	args = append(args, o.Matrix...)
	cmd := exec.CommandContext(ctx, o.Torture, args...)
	cmd.Env = append(os.Environ(), ExhibitEnv+"="+bin)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = o.Progress, &stderr
	if o.Progress == nil {
		cmd.Stdout = io.Discard
	}
	runErr := cmd.Run()
	b, err := os.ReadFile(filepath.Join(out, matrix.JSONFile))
	if err != nil {
		if runErr != nil {
			return nil, fmt.Errorf("torture matrix %s: %v: %s", e.Spec, runErr, lastLines(stderr.String(), 2))
		}
		return nil, err
	}
	var m matrix.Result
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("read %s: %w", matrix.JSONFile, err)
	}
	var exit *exec.ExitError
	if runErr != nil && !(errors.As(runErr, &exit) && exit.ExitCode() == 1) && m.Errors == 0 {
		return nil, fmt.Errorf("torture matrix %s: %v: %s", e.Spec, runErr, lastLines(stderr.String(), 2))
	}
	return &m, nil
}

// excerpt is the first anomaly of a breaking cell, in the words of its
// run's summary, that the cell quotes (its expect's first, else its
// breaks): the earliest of the lowest seed that shows one. It is what the
// exhibit's page quotes.
func excerpt(out string, c *matrix.CellResult) string {
	q := c.Expect.Quoted()
	if q == nil {
		return ""
	}
	seeds := append([]matrix.SeedResult(nil), c.Seeds...)
	sort.SliceStable(seeds, func(i, j int) bool { return seeds[i].Seed < seeds[j].Seed })
	for _, s := range seeds {
		if !s.Detected || s.Dir == "" {
			continue
		}
		sum, err := summary.Read(filepath.Join(out, s.Dir))
		if err != nil {
			continue
		}
		var first *checker.Anomaly
		for i, a := range sum.Anomalies {
			if q.Matches(a) && (first == nil || a.StartNS < first.StartNS) {
				first = &sum.Anomalies[i]
			}
		}
		if first != nil {
			return fmt.Sprintf("seed %d: %s", s.Seed, describe(*first))
		}
	}
	return ""
}

func describe(a checker.Anomaly) string {
	s := string(a.Kind)
	if a.Class != "" {
		s += " (" + string(a.Class) + ")"
	}
	return s + ": " + a.Detail
}
