package shrink

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/summary"
)

// Target is the anomaly a shrink keeps: its kind and, when set, its class.
type Target struct {
	Kind  checker.Kind  `json:"kind"`
	Class checker.Class `json:"class,omitempty"`
}

// ParseTarget reads KIND or KIND/CLASS (--kind).
func ParseTarget(s string) (Target, error) {
	k, c, _ := strings.Cut(strings.TrimSpace(s), "/")
	if k == "" {
		return Target{}, fmt.Errorf("kind %q: want KIND or KIND/CLASS, like double-holder/within-lease", s)
	}
	return Target{Kind: checker.Kind(k), Class: checker.Class(c)}, nil
}

// Matches reports whether a is the anomaly t asks for.
func (t Target) Matches(a checker.Anomaly) bool {
	return a.Kind == t.Kind && (t.Class == "" || a.Class == t.Class)
}

func (t Target) String() string {
	if t.Class == "" {
		return string(t.Kind)
	}
	return string(t.Kind) + " (" + string(t.Class) + ")"
}

// readRun reads the summary of a run folder: the header its replay is
// built from and the anomalies it found. The folder is untrusted input.
func readRun(dir string) (*summary.Summary, error) {
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if errors.Is(err, fs.ErrNotExist) {
		if st, serr := os.Stat(dir); serr != nil || !st.IsDir() {
			return nil, fmt.Errorf("%s is not a run folder", dir)
		}
		return nil, fmt.Errorf("%s has no summary.json: not a finished run's folder", dir)
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	var s summary.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s/summary.json: %s", dir, strings.TrimPrefix(err.Error(), "json: "))
	}
	if s.Run == nil {
		return nil, fmt.Errorf("%s has no replay command: its summary.json records no run header", dir)
	}
	if s.Run.Lock == "" || s.Run.Clients < 1 || s.Run.Keys < 1 || s.Run.TTLMillis < 1 {
		return nil, fmt.Errorf("%s has no replay command: its run header names no lock, clients, keys or TTL", dir)
	}
	return &s, nil
}

// pickTarget chooses what to keep: the first anomaly (in time) matching
// want, or without want the run's first safety anomaly.
func pickTarget(dir string, s *summary.Summary, want *Target) (Target, error) {
	var first *checker.Anomaly
	for i, a := range s.Anomalies {
		ok := a.Severity == checker.SeveritySafety || checker.SeverityOf(a.Kind) == checker.SeveritySafety
		if want != nil {
			ok = want.Matches(a)
		}
		if ok && (first == nil || a.StartNS < first.StartNS) {
			first = &s.Anomalies[i]
		}
	}
	switch {
	case first != nil && want != nil:
		return *want, nil
	case first != nil:
		return Target{Kind: first.Kind, Class: first.Class}, nil
	case want != nil:
		return Target{}, fmt.Errorf("%s has no %s anomaly to shrink (it has: %s)", dir, want, found(s.Counts))
	}
	return Target{}, fmt.Errorf("%s has no safety anomaly to shrink (verdict %s, anomalies: %s); name one with --kind", dir, s.Verdict, found(s.Counts))
}

func found(counts map[checker.Kind]int) string {
	var parts []string
	for k, n := range counts {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// Size is how big a run is, in what the shrink reduces and what it leaves
// for a person to read.
type Size struct {
	Clients  int      `json:"clients"`
	Keys     int      `json:"keys"`
	Duration string   `json:"duration"`
	Faults   []string `json:"faults"`
	Overrun  float64  `json:"overrun"`
	Abandon  float64  `json:"abandon"`
	// FaultWindows counts the faults the run injected; Events the lines of
	// its history. Both are zero when the run left no folder to count in.
	FaultWindows int `json:"fault_windows"`
	Events       int `json:"events"`
}

// sizeOf measures the run that header r describes, and the folder dir it
// left, if any.
func sizeOf(o locktorture.Options, dir string) Size {
	s := Size{Clients: o.Clients, Keys: o.Keys, Duration: o.Duration.String(), Faults: append([]string{}, o.Faults...),
		Overrun: o.Overrun, Abandon: o.Abandon}
	if dir == "" {
		return s
	}
	if sum, err := readRun(dir); err == nil {
		s.FaultWindows = len(sum.Faults)
	}
	if f, err := os.Open(filepath.Join(dir, "history.jsonl")); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			s.Events++
		}
		f.Close()
	}
	return s
}

// String is the size in one line: "8 clients, 1 keys, 20s, faults [pause-client], overrun 0.3".
func (s Size) String() string {
	out := fmt.Sprintf("%d clients, %d keys, %s, %d faults %v", s.Clients, s.Keys, s.Duration, len(s.Faults), s.Faults)
	if s.Overrun > 0 {
		out += fmt.Sprintf(", overrun %v", s.Overrun)
	}
	if s.Abandon > 0 {
		out += fmt.Sprintf(", abandon %v", s.Abandon)
	}
	if s.Events > 0 {
		out += fmt.Sprintf("; %d fault windows, %d history lines", s.FaultWindows, s.Events)
	}
	return out
}

// cloneHeader copies r with its own Params, to change without touching r,
// each setting under its name of today (history.RunInfo.Settings).
func cloneHeader(r history.RunInfo) history.RunInfo {
	r.Params = r.Settings()
	return r
}

func durationOf(r history.RunInfo) time.Duration {
	if d := paramDuration(r, "duration", 0); d > 0 {
		return d
	}
	return locktorture.DefaultOptions().Duration
}
