// Package summary declares summary.json, a run's verdict for programs: every
// anomaly with its kind, class, clients, keys and times, the counts, each
// checker's result, the run's statistics and its fault windows. The run
// writes it; the report, the results index and the matrix read it back. It
// is the one declaration of that file's format.
package summary

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// FileName is summary.json's name in a run folder.
const FileName = "summary.json"

// Summary is summary.json.
type Summary struct {
	RunID       string               `json:"run_id"`
	Run         *history.RunInfo     `json:"run"`
	Verdict     checker.Verdict      `json:"verdict"`
	Interrupted bool                 `json:"interrupted,omitempty"`
	Counts      map[checker.Kind]int `json:"counts"`
	// Classes counts by kind and class every anomaly Counts counts, not
	// only those listed in Anomalies. Nil in a summary written before it
	// was counted: a reader then has only the listed ones to count.
	Classes   checker.ClassCounts `json:"classes"`
	Anomalies []checker.Anomaly   `json:"anomalies"`
	// Stalled counts, apart from Counts, the anomalies a stall of the
	// harness itself explains; Notes say how the verdict was reached (see
	// checker.Report).
	Stalled map[checker.Kind]int `json:"stalled,omitempty"`
	Notes   []string             `json:"notes,omitempty"`
	// Untested says what the run did not put to the test; with anything
	// in it the verdict is never valid (checker.Untested).
	Untested []string         `json:"untested,omitempty"`
	Checkers []checker.Result `json:"checkers"`
	Stats    Stats            `json:"stats"`
	// Faults are the fault windows of the history, from the instant each
	// took effect to its heal.
	Faults []history.Window `json:"faults"`
}

// Stats summarise the operations of a run.
type Stats struct {
	Duration   time.Duration `json:"-"`
	DurationMs int64         `json:"duration_ms"`
	// Ops counts lock operations (acquires and releases) in every
	// workload, so that OpsPerSec compares across workloads; ResourceOps
	// counts the guarded resource's own operations apart.
	Ops           int64   `json:"ops"`
	OpsPerSec     float64 `json:"ops_per_sec"`
	ResourceOps   int64   `json:"resource_ops,omitempty"`
	Acquired      int64   `json:"acquired"`
	AcquireFailed int64   `json:"acquire_failed"`
	// Unknown counts every operation whose outcome is unknown, those a
	// crash or a silent lock program ended included.
	Unknown int64 `json:"unknown"`
	Crashes int64 `json:"crashes"`
	// MasterSwitches counts the failovers the topology observed.
	MasterSwitches int64 `json:"master_switches,omitempty"`
	// Stalls counts the harness's own stalls of 50 ms or more (see
	// history.WatchStalls), LongestStallMs the longest: a stall near half
	// a TTL is where the checks start excusing anomalies, so a run whose
	// harness stood still that long tested less than it says.
	Stalls         int64 `json:"stalls"`
	LongestStallMs int64 `json:"longest_stall_ms"`
	// Faults counts the fault starts: how many found a target, had to
	// wait for it, or gave up.
	Faults *FaultStats `json:"faults,omitempty"`
}

// FaultStats count what a run's fault starts found.
type FaultStats struct {
	// Started: starts that took effect.
	Started int `json:"started"`
	// Aimed: of those, the ones that found a protocol target (a client at
	// its step, a node holding a live lease) and hit it.
	Aimed int `json:"aimed"`
	// Waited: of the aimed ones, those that had to wait for it.
	Waited int `json:"waited"`
	// Late: of the aimed ones, those whose planned step had passed before
	// they could wait for it; they hit the next one instead.
	Late int `json:"late"`
	// GaveUp: starts that found no target in time and did nothing.
	GaveUp int `json:"gave_up"`
	// Failed: starts that failed for another reason.
	Failed int `json:"failed"`
	// ByFault counts each fault of the run apart, every one the run asked
	// for listed (0 of 0: its first window never came).
	ByFault map[string]FaultCount `json:"by_fault,omitempty"`
}

// FaultCount is what became of one fault's starts. A fault that never took
// effect tested nothing, and the run says so (checker.Report.Untested).
type FaultCount struct {
	// Started: how often the schedule started it, whatever came of it
	// (the run's Started counts only those that took effect).
	Started int `json:"started"`
	// TookEffect: the starts that took effect, each a window in the history.
	TookEffect int `json:"took_effect"`
	// GaveUp: the starts that found no target in time and did nothing.
	GaveUp int `json:"gave_up,omitempty"`
	// Failed: the starts that failed for another reason.
	Failed int `json:"failed,omitempty"`
	// Unfinished: the starts the run's end cut short while the fault
	// still waited for its target.
	Unfinished int `json:"unfinished,omitempty"`
	// WaitedFor says, of the last start that found no target (it gave
	// up, or the run ended first), what it waited for, what came instead
	// and what would have matched.
	WaitedFor string `json:"waited_for,omitempty"`
}

// Write writes s as dir/summary.json, with empty lists written as [] so
// that programs need not tell null from none.
func Write(dir string, s Summary) error {
	if s.Faults == nil {
		s.Faults = []history.Window{}
	}
	if s.Anomalies == nil {
		s.Anomalies = []checker.Anomaly{}
	}
	if s.Classes == nil {
		s.Classes = checker.ClassCounts{}
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// maxSize bounds summary.json, which is untrusted input like the history.
const maxSize = 64 << 20

// Read reads dir/summary.json strictly; (nil, nil) when there is none.
func Read(dir string) (*Summary, error) {
	s, err := ReadFS(os.DirFS(dir), FileName)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, FileName), err)
	}
	return s, nil
}

// ReadFS reads the summary at name in fsys strictly, as Read does; a
// reader confined to a folder (an os.Root's FS) reads nothing outside it.
func ReadFS(fsys fs.FS, name string) (*Summary, error) {
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open summary: %w", err)
	}
	defer f.Close()
	var s Summary
	if err := json.NewDecoder(io.LimitReader(f, maxSize)).Decode(&s); err != nil {
		return nil, fmt.Errorf("not a summary: %v", err)
	}
	switch s.Verdict {
	case checker.Valid, checker.Invalid, checker.Unknown, checker.Untested:
	default:
		return nil, fmt.Errorf("unknown verdict %q", s.Verdict)
	}
	return &s, nil
}
