// Run strings the stages together, each handing the next what it made. In
// the file order doc.go gives it comes after every stage, so each stage it
// calls is declared above it.

package locktorture

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Run performs one run. It returns an error for bad options (a *UsageError)
// or a harness failure; a lock that breaks is not an error but a verdict.
// Cancelling ctx ends the run early: what was recorded is still checked and
// written, and everything the run started is stopped before Run returns.
func Run(ctx context.Context, opts Options) (*Result, error) {
	pl, err := newPlan(opts)
	if err != nil {
		return nil, err
	}
	dir, hist, err := makeFolder(pl)
	if err != nil {
		return nil, err
	}
	var out io.Writer // nil: the history stays in memory only
	if hist != nil {
		defer hist.Close()
		out = hist
	}
	srv, err := startServers(ctx, pl)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	f, err := startClients(ctx, pl, srv, out, dir)
	if err != nil {
		return nil, err
	}
	defer f.close()
	s, err := runSchedule(ctx, pl, srv, f)
	if err != nil {
		return nil, err
	}
	j, err := judge(ctx, pl, f, s)
	if err != nil {
		return nil, err
	}
	res := newResult(pl, dir, s, j)
	if err := write(ctx, f.header, res, j.faults); err != nil {
		return nil, err
	}
	return res, nil
}

// makeFolder makes the run's folder and its history file, when the run has
// one (Options.OutDir): "" and nil without.
func makeFolder(pl *plan) (string, *os.File, error) {
	if pl.opts.OutDir == "" {
		return "", nil, nil
	}
	dir := filepath.Join(pl.opts.OutDir, pl.opts.RunID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("make run dir: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return "", nil, fmt.Errorf("create history: %w", err)
	}
	return dir, f, nil
}
