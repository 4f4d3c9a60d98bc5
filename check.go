package locktorture

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/checker/stream"
	"github.com/locktorture/locktorture/history"
)

// CheckOptions configure a re-check of a saved history.
type CheckOptions struct {
	// Timeout bounds the linearizability search; zero means the default of
	// a run (DefaultOptions().CheckTimeout).
	Timeout time.Duration
	// OutDir receives what the check writes (linearizability.html when the
	// history is not linearizable), created if missing. Empty: the check
	// writes nothing at all, so checking a folder never changes it behind
	// its owner's back.
	OutDir string
	// Ops declares operation names beyond those of the registered
	// workloads, so the strict reader accepts them (history.WithOps).
	Ops []history.Op
	// Registries is where the history's workload and the checkers are
	// looked up; nil fields take the built-ins, as in a run.
	Registries Registries
	// Checkers names checkers to run beyond the lock checkers and the
	// workload's own.
	Checkers []string
}

// CheckResult is what a re-check found.
type CheckResult struct {
	Report *checker.Report
	// History has the header and the torn-line report of the file; its
	// Events are not kept: the file is checked as it is read, in memory
	// bounded by what a lease lets matter.
	History *history.History
	// Events is how many events the check read, the header aside.
	Events int64
	// Files are the paths of the files the check really wrote, in OutDir.
	Files []string
}

// Check re-checks a saved history (a history.jsonl, or a run folder holding
// one) without Redis. A missing or malformed file, or one without any
// operation, is a *UsageError: it is no evidence, and never valid.
func Check(ctx context.Context, path string, opts CheckOptions) (*CheckResult, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, usage("%v", err)
	}
	if st.IsDir() {
		path = filepath.Join(path, "history.jsonl")
	}
	opts.Registries.Fill()
	ops := append([]history.Op(nil), opts.Ops...)
	for _, w := range opts.Registries.Workloads.Entries() {
		ops = append(ops, w.Ops...)
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultOptions().CheckTimeout
	}
	checkInto := func(dir string) (*CheckResult, error) {
		return streamCheck(ctx, path, dir, opts, ops)
	}
	if opts.OutDir == "" {
		return checkInto("")
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, usage("check output folder: %v", err)
	}
	// The checkers write into a fresh folder inside OutDir, so that what
	// appears there is exactly what this check wrote, whatever OutDir held.
	tmp, err := os.MkdirTemp(opts.OutDir, ".check-")
	if err != nil {
		return nil, fmt.Errorf("check output folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	res, err := checkInto(tmp)
	if err != nil {
		return nil, err
	}
	written, err := os.ReadDir(tmp)
	if err != nil {
		return nil, fmt.Errorf("list check output: %w", err)
	}
	for _, n := range written {
		dst := filepath.Join(opts.OutDir, n.Name())
		if err := os.Rename(filepath.Join(tmp, n.Name()), dst); err != nil {
			return nil, fmt.Errorf("move check output into %s: %w", opts.OutDir, err)
		}
		res.Files = append(res.Files, dst)
	}
	return res, nil
}

// checkBatch is the stream's Batch for a saved history: an own part of
// four Reach, so that the history kept around it for the checks (at most
// Back before, and what settles the holds after) is re-checked less often;
// a busy history closes its own parts by count first (MaxEvents) anyway.
const checkBatch = 4

// readBatch is how many events the reading goroutine hands over at once.
const readBatch = 4096

// eventBatch is a run of validated events, or the error that ended them.
type eventBatch struct {
	evs []history.Event
	err error
}

// readEvents reads and validates rd's events on its own goroutine, so that
// decoding (a fifth of a check's work) overlaps the checking; the channel
// closes after the last batch, or once ctx is done.
func readEvents(ctx context.Context, rd *history.Reader) <-chan eventBatch {
	ch := make(chan eventBatch, 4)
	go func() {
		defer close(ch)
		send := func(b eventBatch) bool {
			select {
			case ch <- b:
				return true
			case <-ctx.Done():
				return false
			}
		}
		evs := make([]history.Event, 0, readBatch)
		for {
			e, err := rd.Next()
			if errors.Is(err, io.EOF) {
				if len(evs) > 0 {
					send(eventBatch{evs: evs})
				}
				return
			}
			if err != nil {
				send(eventBatch{evs: evs, err: err})
				return
			}
			evs = append(evs, e)
			if len(evs) == readBatch {
				if !send(eventBatch{evs: evs}) {
					return
				}
				evs = make([]history.Event, 0, readBatch)
			}
		}
	}()
	return ch
}

// streamCheck reads the history at path line by line, validating each, and
// checks it through a stream.Stream (package checker/stream): the workload
// (hence the checkers) is named by the header, so the stream starts once
// the first line is read.

func streamCheck(ctx context.Context, path, dir string, opts CheckOptions, ops []history.Op) (*CheckResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usage("open history: %v", err)
	}
	defer f.Close()
	rd := history.NewReader(bufio.NewReaderSize(f, 1<<20), history.WithOps(ops...))
	var s *stream.Stream
	start := func(header *history.RunInfo) error {
		workload := DefaultOptions().Workload
		if header != nil && header.Workload != "" {
			workload = header.Workload
		}
		w, err := opts.Registries.Workloads.Get(workload)
		if err != nil {
			return usage("history of workload %q: %v", workload, err)
		}
		names := append(append([]string(nil), w.Checkers...), opts.Checkers...)
		vis := ""
		if dir != "" {
			vis = filepath.Join(dir, "linearizability.html")
		}
		s, err = stream.New(opts.Registries.Checkers, names,
			checker.MutexOptions{Linearizable: checker.LinearizableOptions{Timeout: opts.Timeout, VisualizationPath: vis}}, stream.Options{Batch: checkBatch})
		if err != nil {
			return &UsageError{err}
		}
		return nil
	}
	readCtx, stop := context.WithCancel(ctx)
	defer stop()
	for b := range readEvents(readCtx, rd) {
		for _, e := range b.evs {
			if s == nil {
				if err := start(e.Run); err != nil {
					return nil, err
				}
			}
			s.Add(ctx, e)
		}
		if b.err != nil {
			return nil, &UsageError{fmt.Errorf("%s: %w", path, b.err)}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, usage("%s: no events", path)
	}
	h := &history.History{Run: rd.Run()}
	h.Dropped, h.DroppedLine = rd.Dropped()
	rep := s.Close(ctx)
	checker.MarkAfterSwitch(&history.History{Run: h.Run, Events: s.Infos()}, &rep, 0)
	return &CheckResult{Report: &rep, History: h, Events: s.Events()}, nil
}
