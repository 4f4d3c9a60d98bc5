package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/report"
	"github.com/locktorture/locktorture/summary"
)

// TestShrinkBadInput: a folder with no anomaly or no replay command, and
// bad flags: one line, exit 2, nothing run.
func TestShrinkBadInput(t *testing.T) {
	dir := t.TempDir()
	folder := func(name string, run *history.RunInfo) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(summary.Summary{Run: run, Verdict: checker.Valid, Anomalies: []checker.Anomaly{}})
		if err := os.WriteFile(filepath.Join(p, "summary.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	valid := folder("valid", &history.RunInfo{Lock: "token", Clients: 4, Keys: 1, TTLMillis: 300, Seed: 1})
	bare := folder("bare", nil)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"shrink", valid}, "has no safety anomaly to shrink (verdict valid"},
		{[]string{"shrink", bare}, "has no replay command"},
		{[]string{"shrink", dir}, "has no summary.json"},
		{[]string{"shrink"}, "want exactly one RUN_DIR"},
		{[]string{"shrink", valid, "--kind", "/x"}, "--kind \"/x\": want KIND"},
		{[]string{"shrink", valid, "--kind", "double-holder/within-lease"}, "has no double-holder (within-lease) anomaly"},
		{[]string{"shrink", valid, "--budget", "0s"}, "--budget 0s"},
	} {
		oneLineExit2(t, tc.args, tc.want)
	}
	if _, err := os.Stat(valid + "-shrink"); err == nil {
		t.Errorf("a refused shrink left %s-shrink", valid)
	}
}

// TestReplayArgsAreRunFlags: every parameter a run header can hold comes
// back from report.ReplayArgs as a flag torture run knows, so a replay (and
// the smallest command of a shrink) runs as printed.
func TestReplayArgsAreRunFlags(t *testing.T) {
	params := map[string]string{"hold": "1ms..2ms", "overrun": "0.1", "abandon": "0.1", "think": "1ms", "wait": "1s",
		"duration": "2s", "retry_delay": "1ms", "redis_retries": "2", "redis_timeout": "1s", "nodes": "3",
		"persistence": "always", "nemesis": "latency", "checkers": "reentrant", "nemesis_interval": "1s",
		"nemesis_duration": "1s", "warmup": "1s", "target": "random", "trigger": "acquire", "latency": "1s",
		"jitter": "1ms", "latency_all": "true", "direction": "up", "lost_reply_rate": "0.3", "downtime": "1s",
		"partition_clients": "one", "clock_jump": "1s"}
	info := &history.RunInfo{Lock: "redlock", Workload: "mutex", Topology: "redlock", Clients: 3, Keys: 1, TTLMillis: 300, Seed: 1, Params: params}
	if _, err := locktorture.OptionsFromRun(info, locktorture.Registries{}); err != nil {
		t.Fatalf("OptionsFromRun: %v", err)
	}
	args := report.ReplayArgs(info)
	if len(args) < 2*len(params) {
		t.Fatalf("replay args %q", args)
	}
	// A last, bad --clients makes the run stop at validation, after every
	// flag before it parsed.
	oneLineExit2(t, append(args[1:], "--clients", "0"), "--clients 0: want 1..10000")

	// A zero or an off switch is what the run ran with, not "unset": a
	// setting's default may be neither (lost-reply-rate is 0.2).
	info.Params = map[string]string{"nemesis": "lost-reply", "lost_reply_rate": "0", "latency_all": "false", "overrun": "0"}
	args = report.ReplayArgs(info)
	for _, want := range []string{"--lost-reply-rate 0", "--latency-all=false", "--overrun 0"} {
		if !strings.Contains(strings.Join(args, " "), want) {
			t.Errorf("replay args %q lack %q", args, want)
		}
	}
	oneLineExit2(t, append(args[1:], "--clients", "0"), "--clients 0: want 1..10000")
}
