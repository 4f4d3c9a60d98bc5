package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/shrink"
)

// cmdMatrix runs a matrix spec: every cell with every seed, one run after
// another, then the table and the matrix files. Exit 0 when every cell kept
// its promise, 1 when some did not, 2 for a bad spec, a harness error or an
// interrupted matrix.
func cmdMatrix(args []string, stdout, stderr io.Writer, regs locktorture.Registries) int {
	if len(args) > 0 && args[0] == "merge" {
		return cmdMerge(args[1:], stdout, stderr)
	}
	var out, shardText string
	var quiet, resume bool
	var mf matrixRunFlags
	fs := newFlags("matrix", stderr)
	mf.define(fs)
	fs.StringVar(&out, "out", "", "folder for runs/, matrix.json, matrix.md, junit.xml and index.html (default results/matrix-NAME-TIME)")
	fs.BoolVar(&quiet, "quiet", false, "no progress bar or progress lines")
	fs.StringVar(&shardText, "shard", "", "run only the K-th of N parts of the runs, K/N (merge the parts with 'torture matrix merge')")
	fs.BoolVar(&resume, "resume", false, "take up the matrix.json in --out and run only the runs it lacks")
	path, help, err := parseOne(fs, args, stdout, "SPEC.yaml")
	if code, stop := parseStop(help, err, "matrix", stderr); stop {
		return code
	}
	override, err := mf.parsedSeeds()
	if err != nil {
		return fail(stderr, fmt.Errorf("matrix: %v", err))
	}
	var shard matrix.Shard
	if shardText != "" {
		if shard, err = matrix.ParseShard(shardText); err != nil {
			return fail(stderr, fmt.Errorf("matrix: --%v", err))
		}
	}
	if resume && out == "" {
		return fail(stderr, fmt.Errorf("matrix: --resume needs --out, the folder of the matrix to resume"))
	}
	spec, err := matrix.Load(path, regs)
	if err != nil {
		return fail(stderr, fmt.Errorf("matrix %s: %v", path, err))
	}
	if out == "" {
		out = filepath.Join("results", fmt.Sprintf("matrix-%s-%s", spec.Name, time.Now().Format("20060102-150405")))
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	go func() {
		// After the first signal the run in progress winds down and the
		// matrix writes what it has; a second one kills at once.
		<-ctx.Done()
		cancel()
	}()
	show := &matrixProgress{stdout: stdout, stderr: stderr, tty: !quiet && isTerminal(stdout)}
	opts := matrix.Options{Seeds: override, Cells: mf.cells, OutDir: out, FullRuns: mf.full,
		Shard: shard, Resume: resume, Logf: show.logf}
	if !quiet {
		opts.Progress = show.progress
	}
	part := ""
	if shard.N > 0 {
		part = ", shard " + shard.String()
	}
	fmt.Fprintf(stdout, "torture matrix %s: %d cells%s, output in %s\n", spec.Name, len(spec.Cells), part, out)
	limitMemory()
	res, err := matrix.Run(ctx, spec, opts)
	show.done()
	if err != nil {
		return fail(stderr, fmt.Errorf("matrix: %v", err))
	}
	if mf.shrink && !res.Interrupted {
		shrinkCells(ctx, res, out, shrink.Options{Budget: mf.shrinkBudget, Registries: regs, Logf: opts.Logf}, stdout)
	}
	return finish(res, out, stdout, stderr)
}

// shrinkCells shrinks the first failing seed of each cell that did not go
// as expected into out/shrink/RUN_ID/ (named relative to out in the
// result, as its runs are) and notes the smallest command in
// the cell's result.
func shrinkCells(ctx context.Context, res *matrix.Result, out string, opts shrink.Options, stdout io.Writer) {
	for _, f := range shrink.Failures(res) {
		var cell *matrix.CellResult
		for i := range res.Cells {
			if res.Cells[i].Name == f.Cell {
				cell = &res.Cells[i]
			}
		}
		cell.Shrunk = &matrix.Shrunk{Seed: f.Seed.Seed, Note: f.Note}
		if f.Note != "" {
			fmt.Fprintf(stdout, "shrink %s: %s\n", f.Cell, f.Note)
			continue
		}
		o := opts
		o.Target, o.OutDir = f.Target, filepath.Join(out, matrix.ShrinkDir, f.Seed.RunID)
		o.Progress = func(c shrink.Candidate) {
			fmt.Fprintf(stdout, "shrink %s seed %d: %s\n", f.Cell, f.Seed.Seed, candidateLine(c))
		}
		dir := filepath.FromSlash(f.Seed.Dir)
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(out, dir) // matrix.json names runs inside the matrix folder
		}
		r, err := shrink.Shrink(ctx, dir, o)
		switch {
		case err != nil:
			cell.Shrunk.Note = oneLine(err.Error())
		case !r.Reproduced:
			cell.Shrunk.Note = fmt.Sprintf("seed %d did not show %s again on a rerun", r.Seed, r.Target)
		default:
			cell.Shrunk.Dir, cell.Shrunk.Command = matrix.ShrinkDir+"/"+f.Seed.RunID, r.Smallest
			fmt.Fprintf(stdout, "shrink %s seed %d: %s\n  from %s\n  to   %s\n", f.Cell, r.Seed, r.Command(), r.From, r.To)
		}
		if cell.Shrunk.Note != "" {
			fmt.Fprintf(stdout, "shrink %s seed %d: %s\n", f.Cell, f.Seed.Seed, cell.Shrunk.Note)
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// finish prints the table, writes the matrix files and returns the exit
// code of a matrix, a shard of one or a merge.
func finish(res *matrix.Result, out string, stdout, stderr io.Writer) int {
	if err := res.WriteTable(stdout); err != nil {
		return fail(stderr, err)
	}
	if err := res.WriteFiles(out); err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintf(stdout, "matrix files: %s\n", filepath.Join(out, matrix.JSONFile))
	switch {
	case res.Interrupted:
		fmt.Fprintln(stderr, "torture: matrix interrupted; the files cover the runs that finished (--resume takes it up again)")
		return exitUsage
	case res.Errors > 0:
		fmt.Fprintf(stderr, "torture: %d runs ended in a harness error (see %s)\n", res.Errors, matrix.JSONFile)
		return exitUsage
	case res.OK():
		return exitValid
	}
	return exitInvalid
}

// matrixProgress shows a matrix going: a progress bar on a terminal, a line
// a run otherwise, and harness messages above the bar.
type matrixProgress struct {
	stdout, stderr io.Writer
	tty            bool
	bar            *progressbar.ProgressBar
}

func (m *matrixProgress) logf(format string, args ...any) {
	if m.bar != nil {
		_ = m.bar.Clear()
	}
	fmt.Fprintf(m.stderr, "torture: "+format+"\n", args...)
}

func (m *matrixProgress) progress(p matrix.Progress) {
	if !m.tty {
		if p.Seed != nil {
			fmt.Fprintln(m.stdout, p.Line())
		}
		return
	}
	if m.bar == nil {
		m.bar = progressbar.NewOptions(p.Total, progressbar.OptionSetWriter(m.stdout),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true), progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionFullWidth())
	}
	if p.Seed == nil {
		m.bar.Describe(fmt.Sprintf("cell %d/%d %s seed %d", p.CellIndex, p.CellCount, p.Cell.Name, p.NextSeed))
		return
	}
	_ = m.bar.Clear()
	fmt.Fprintln(m.stdout, p.Line())
	_ = m.bar.Add(1)
}

// done clears the bar once the matrix has run.
func (m *matrixProgress) done() {
	if m.bar != nil {
		_ = m.bar.Clear()
		fmt.Fprintln(m.stdout)
	}
}
