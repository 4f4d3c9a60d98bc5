package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportCommand: `torture report` on a run folder, a bare history and
// a results folder, and one-line errors with exit code 2 for bad input.
func TestReportCommand(t *testing.T) {
	results := t.TempDir()
	// A folder holding only a history (as `torture check` leaves it).
	runDir := writeRun(t, filepath.Join(results, "run1"), brokenHistory)
	broken := writeRun(t, filepath.Join(t.TempDir(), "broken"), []string{"{not json"})
	badSummary := writeRun(t, filepath.Join(t.TempDir(), "badsum"), brokenHistory)
	if err := os.WriteFile(filepath.Join(badSummary, "summary.json"), []byte(`{"verdict":"maybe"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		args  []string
		code  int
		want  string // in stdout for 0, in the one-line error otherwise
		files []string
	}{
		{"run folder without summary", []string{"report", runDir}, 0, "report.html", []string{filepath.Join(runDir, "report.html")}},
		{"history file", []string{"report", filepath.Join(runDir, "history.jsonl")}, 0, "report.html", nil},
		{"results folder", []string{"report", "--all", results}, 0, "index.html (1 runs)", []string{filepath.Join(results, "index.html")}},
		{"no argument", []string{"report"}, 2, "want exactly one", nil},
		{"two arguments", []string{"report", runDir, runDir}, 2, "want exactly one", nil},
		{"missing", []string{"report", filepath.Join(results, "nope")}, 2, "no such file", nil},
		{"not a run", []string{"report", t.TempDir()}, 2, "no run folder", nil},
		{"malformed history", []string{"report", broken}, 2, "not a JSON event", nil},
		{"malformed summary", []string{"report", badSummary}, 2, `unknown verdict "maybe"`, nil},
		{"bad flag", []string{"report", "--frob", runDir}, 2, "frob", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			if code != tc.code {
				t.Fatalf("exit %d, want %d (stdout %q, stderr %q)", code, tc.code, out.String(), errb.String())
			}
			text := out.String()
			if code != 0 {
				text = errb.String()
				if strings.Count(text, "\n") != 1 {
					t.Errorf("error is not one line: %q", text)
				}
			}
			if !strings.Contains(text, tc.want) {
				t.Errorf("output %q lacks %q", text, tc.want)
			}
			for _, f := range tc.files {
				if _, err := os.Stat(f); err != nil {
					t.Errorf("not written: %v", err)
				}
			}
		})
	}
}
