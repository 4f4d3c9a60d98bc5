package cli

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/shrink"
	"github.com/locktorture/locktorture/summary"
)

// execToken is an exec: command line of the reference client: this test
// binary, which package locks/program's init turns into the token lock
// program. The quoted word (which the program ignores) must survive the
// shell the printed replay command goes through.
func execToken(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return `exec:LOCKTORTURE_SERVE_LOCK=token GOMAXPROCS=1 ` + exe + ` "it's ignored"`
}

// breakingRun is a run of lock that breaks within its 2 s: holds outlive
// the TTL, and a second client walks in.
func breakingRun(lock, out, id string) []string {
	return []string{"run", "--lock", lock, "--clients", "3", "--ttl", "200ms", "--hold", "5ms..20ms", "--overrun", "0.3",
		"--duration", "2s", "--seed", "5", "--out", out, "--run-id", id, "--quiet"}
}

// TestReplayLockPrograms: the replay command a lock program run's report
// prints, run as printed through a shell, runs the same run again: the
// same header (an exec: command line included, the program's own name no
// flag) and the same verdict.
func TestReplayLockPrograms(t *testing.T) {
	clustertest.Need(t)
	for _, tc := range []struct{ name, lock, program string }{
		{"in-tree", "redis-py", "redis-py "},
		{"exec", execToken(t), "exec-token 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.lock == "redis-py" && exec.Command("/usr/bin/python3", "-c", "import redis").Run() != nil {
				t.Skip("/usr/bin/python3 cannot import redis")
			}
			out := t.TempDir()
			code, orig := runFolder(t, breakingRun(tc.lock, out, "orig"), filepath.Join(out, "orig"))
			if orig.Run.Lock != tc.lock || !strings.HasPrefix(orig.Run.Program, tc.program) {
				t.Fatalf("header lock %q, program %q; want %q, %q", orig.Run.Lock, orig.Run.Program, tc.lock, tc.program)
			}
			argv := shellWords(t, printedReplay(t, filepath.Join(out, "orig", "report.html")))
			if argv[0] != "torture" || argv[1] != "run" {
				t.Fatalf("replay command %q", argv)
			}
			again, replay := runFolder(t, append(argv[1:], "--out", out, "--run-id", "replay", "--quiet"), filepath.Join(out, "replay"))
			a, b := *orig.Run, *replay.Run
			a.ID, b.ID, b.Started = "", "", a.Started
			if !reflect.DeepEqual(a, b) {
				t.Errorf("the replay's header differs:\n run    %+v\n replay %+v", a, b)
			}
			if again != code || replay.Verdict != orig.Verdict {
				t.Errorf("replay: exit %d, verdict %s; the run: exit %d, verdict %s", again, replay.Verdict, code, orig.Verdict)
			}
		})
	}
}

// TestShrinkExecRun: torture shrink takes an exec: run that broke and
// prints a smallest command that runs the same command line.
func TestShrinkExecRun(t *testing.T) {
	clustertest.Need(t)
	out, lock := t.TempDir(), execToken(t)
	if code, s := runFolder(t, breakingRun(lock, out, "orig"), filepath.Join(out, "orig")); code != exitInvalid {
		t.Fatalf("the exec: run held: exit %d, %v", code, s.Counts)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"shrink", "--budget", "90s", "--quiet", filepath.Join(out, "orig")}, &stdout, &stderr); code != exitValid {
		t.Fatalf("shrink: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "orig-shrink", shrink.FileName))
	var res shrink.Result
	if err != nil || json.Unmarshal(b, &res) != nil {
		t.Fatalf("shrink.json: %v\n%s", err, b)
	}
	if len(res.Smallest) < 4 || res.Smallest[3] != lock || res.To.Clients > res.From.Clients || !res.Reproduced {
		t.Errorf("smallest %q, from %v to %v", res.Smallest, res.From, res.To)
	}
	if !strings.Contains(stdout.String(), "smallest: torture run --lock 'exec:LOCKTORTURE_SERVE_LOCK=token") {
		t.Errorf("no smallest command in\n%s", stdout.String())
	}
}

// runFolder runs args through the command line and reads the summary of
// the run folder dir it leaves.
func runFolder(t *testing.T, args []string, dir string) (int, *summary.Summary) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	if code != exitValid && code != exitInvalid {
		t.Fatalf("%q: exit %d\n%s%s", args, code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	var s summary.Summary
	if err != nil || json.Unmarshal(b, &s) != nil || s.Run == nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return code, &s
}

var replayPre = regexp.MustCompile(`(?s)<pre id="replay">(.*?)</pre>`)

// printedReplay is the command under "Replay this run" in a report.
func printedReplay(t *testing.T, page string) string {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	m := replayPre.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no replay command", page)
	}
	return html.UnescapeString(string(m[1]))
}

// shellWords is the argument list sh makes of command.
func shellWords(t *testing.T, command string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", `torture() { printf '%s\0' torture "$@"; }; `+command).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", command, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}
